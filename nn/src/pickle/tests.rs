//! The pickle reader on the real Planetoid files and on pickles written here opcode by opcode:
//! what each builds, and each refusal with its offset and opcode.

use super::*;
use std::path::PathBuf;

/// The checkout's raw Planetoid files (never copied into the repository).
fn raw(dataset: &str, file: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/planetoid").join(dataset).join("raw");
    assert!(dir.is_dir(), "{} holds the raw files (the checkout's ../shared/data)", dir.display());
    dir.join(file)
}

/// Opcodes of a protocol-2 pickle, written the way Python 2 writes numpy and scipy objects.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn op(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
    fn global(self, module: &str, name: &str) -> Self {
        self.op(b"c").op(module.as_bytes()).op(b"\n").op(name.as_bytes()).op(b"\n")
    }
    fn int(self, v: i32) -> Self {
        self.op(b"J").op(&v.to_le_bytes())
    }
    fn short_str(self, s: &[u8]) -> Self {
        self.op(&[b'U', s.len() as u8]).op(s)
    }
    fn str(self, s: &[u8]) -> Self {
        self.op(b"T").op(&(s.len() as i32).to_le_bytes()).op(s)
    }
    /// A numpy array `(descr, order, shape, raw bytes, fortran)`.
    fn array(self, descr: &str, order: &str, shape: &[i32], data: &[u8], fortran: bool) -> Self {
        let mut w = self.global("numpy.core.multiarray", "_reconstruct").global("numpy", "ndarray");
        w = w.int(0).op(&[0x85]).short_str(b"b").op(&[0x87, b'R']);
        w = w.op(b"(").int(1).op(b"(");
        for &d in shape {
            w = w.int(d);
        }
        w = w.op(b"t").global("numpy", "dtype").short_str(descr.as_bytes()).int(0).int(1).op(&[0x87, b'R']);
        w = w.op(b"(").int(3).short_str(order.as_bytes()).op(b"NNN").int(-1).int(-1).int(0).op(b"tb");
        w.op(&[if fortran { 0x88 } else { 0x89 }]).str(data).op(b"tb")
    }
    /// A scipy `csr_matrix` of `shape` from its arrays (int32 pointers and indices, f32 values).
    fn csr(self, shape: (i32, i32), indptr: &[i32], indices: &[i32], data: &[f32]) -> Self {
        let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let w = self.global("scipy.sparse.csr", "csr_matrix").op(b")").op(&[0x81]).op(b"}").op(b"(");
        let w = w.short_str(b"format").short_str(b"csr").short_str(b"_shape").int(shape.0).int(shape.1).op(&[0x86]);
        let w = w.short_str(b"indptr").array("i4", "<", &[indptr.len() as i32], &le(indptr), false);
        let w = w.short_str(b"indices").array("i4", "<", &[indices.len() as i32], &le(indices), false);
        let values: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.short_str(b"data").array("f4", "<", &[data.len() as i32], &values, false).op(b"ub")
    }
    fn done(self) -> Vec<u8> {
        let mut out = vec![0x80, 2];
        out.extend(self.0);
        out.push(b'.');
        out
    }
}

fn parse(bytes: Vec<u8>) -> Result<Pickle, DataError> {
    Pickle::parse(bytes, Path::new("t.pkl"))
}

/// The error of a pickle that must fail, as `Display` shows it.
fn refusal(bytes: Vec<u8>) -> String {
    parse(bytes).unwrap_err().to_string()
}

#[test]
fn reads_the_real_files() {
    let x = read_pickle(&raw("Cora", "ind.cora.x")).unwrap().csr_matrix().unwrap();
    assert_eq!((x.rows, x.cols, x.indices.len()), (140, 1433, 2647));
    assert_eq!((&x.indptr[..4], &x.indices[..3]), (&[0, 9, 32, 51][..], &[19, 81, 146][..]));
    assert!(x.data.iter().all(|&v| v == 1.0));
    let allx = read_pickle(&raw("CiteSeer", "ind.citeseer.allx")).unwrap().csr_matrix().unwrap();
    assert_eq!((allx.rows, allx.cols), (2312, 3703));
    let y = read_pickle(&raw("Cora", "ind.cora.y")).unwrap().array().unwrap();
    assert_eq!(y.shape, vec![140, 7]);
    assert!(y.data.chunks(7).all(|r| r.iter().sum::<f64>() == 1.0), "one-hot rows");
    let graph = read_pickle(&raw("Cora", "ind.cora.graph")).unwrap().adjacency().unwrap();
    assert_eq!(graph.len(), 2708);
    assert_eq!(graph[0], (0, vec![633, 1862, 2582]));
    assert_eq!(graph.iter().map(|(_, l)| l.len()).sum::<usize>(), 10858);
    // A file read as what it is not: an error at the object's offset, not a panic.
    let e = read_pickle(&raw("Cora", "ind.cora.y")).unwrap().csr_matrix().unwrap_err().to_string();
    assert!(e.contains("ind.cora.y: byte 64: the pickle's value is not a built scipy csr_matrix"), "{e}");
}

#[test]
fn arrays_of_every_order_and_kind() {
    // A 2 x 3 int16 array, big-endian, stored column-major: read back row-major.
    let data: Vec<u8> = [1i16, 4, 2, 5, 3, -6].iter().flat_map(|v| v.to_be_bytes()).collect();
    let a = parse(Writer::default().array("i2", ">", &[2, 3], &data, true).done()).unwrap().array().unwrap();
    assert_eq!((a.shape, a.data), (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.0]));
    let data: Vec<u8> = [0.5f64, -2.25].iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = parse(Writer::default().array("f8", "<", &[2], &data, false).done()).unwrap().array().unwrap();
    assert_eq!(a.data, vec![0.5, -2.25]);
    let a = parse(Writer::default().array("u1", "|", &[0, 5], &[], false).done()).unwrap().array().unwrap();
    assert_eq!((a.shape, a.data.len()), (vec![0, 5], 0));
}

#[test]
fn csr_matrices_are_checked() {
    let m = parse(Writer::default().csr((2, 3), &[0, 1, 3], &[2, 0, 1], &[1.5, 2.0, -1.0]).done()).unwrap();
    let m = m.csr_matrix().unwrap();
    assert_eq!(
        (m.rows, m.cols, m.indptr, m.indices, m.data),
        (2, 3, vec![0, 1, 3], vec![2, 0, 1], vec![1.5, 2.0, -1.0])
    );
    // (shape, indptr, indices, data, what the error says)
    type Case<'a> = ((i32, i32), &'a [i32], &'a [i32], &'a [f32], &'a str);
    let cases: [Case; 5] = [
        ((2, 3), &[0, 1, 3], &[2, 0, 3], &[1.0; 3], "indices[2] = 3 is outside 0..3"),
        ((2, 3), &[0, 2, 1], &[0, 1], &[1.0; 2], "indptr does not rise from 0 to the 2 entries"),
        ((3, 3), &[0, 1, 2], &[0, 1], &[1.0; 2], "indptr has 3 entries for 3 rows"),
        ((2, 3), &[0, 1, 2], &[0, 1], &[1.0; 3], "2 indices but 3 values"),
        ((2, 3), &[0, -1, 2], &[0, 1], &[1.0; 2], "indptr[1] = -1 is outside"),
    ];
    for (shape, indptr, indices, data, want) in cases {
        let e = parse(Writer::default().csr(shape, indptr, indices, data).done()).unwrap().csr_matrix().unwrap_err();
        assert!(matches!(e, DataError::Binary { .. }) && e.to_string().contains(want), "{want}: {e}");
    }
}

#[test]
fn refuses_what_it_does_not_know_naming_offset_and_opcode() {
    let w = Writer::default;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            w().global("os", "system").done(),
            "byte 2: opcode GLOBAL (0x63): global `os.system` is not one this reader knows",
        ),
        (w().op(b"I1\n").done(), "byte 2: opcode 0x49: not an opcode of the pickles this reader knows"),
        (vec![0x80, 4, b'N', b'.'], "byte 0: opcode PROTO (0x80): protocol 4"),
        (vec![0x80, 2, b'N'], "byte 3: the input ends before STOP"),
        (w().op(b"N").done().into_iter().chain([0]).collect(), "byte 3: opcode STOP (0x2e): 1 bytes follow STOP"),
        (w().op(b"NN").done(), "byte 4: opcode STOP (0x2e): values or marks are left on the stack"),
        (vec![0x80, 2, b'.'], "byte 2: opcode STOP (0x2e): pops an empty stack"),
        (w().op(b"N(").op(&[0x85]).done(), "byte 4: opcode TUPLE1 (0x85): pops an empty stack (or past a mark)"),
        (w().op(b"a").done(), "byte 2: opcode APPEND (0x61): pops an empty stack"),
        (w().op(b"NN").op(b"a").done(), "byte 4: opcode APPEND (0x61): the value below is not a container"),
        (w().op(b"]").op(b"(N").op(b"u").done(), "byte 5: opcode SETITEMS (0x75): an odd number of keys"),
        (w().op(b"h\x07").done(), "byte 2: opcode BINGET (0x68): memo 7 was never set"),
        (w().op(b"T\xff\xff\xff\x7f").done(), "byte 2: opcode BINSTRING (0x54): needs 2147483647 bytes, 1 remain"),
        (w().op(b"T\xff\xff\xff\xff").done(), "byte 2: opcode BINSTRING (0x54): negative length -1"),
        (
            w().op(b"cnumpy\ndtype\n").short_str(b"O8").int(0).int(1).op(&[0x87, b'R']).done(),
            "dtype \"O8\" is not a numeric type",
        ),
        (
            w().global("numpy", "ndarray").op(b")R").done(),
            "opcode REDUCE (0x52): Ndarray called with arguments it does not take",
        ),
        (
            w().global("collections", "defaultdict").op(b")").op(&[0x81]).done(),
            "NEWOBJ (0x81): creates an object other than csr_matrix()",
        ),
        (w().op(b"]N").op(b"b").done(), "opcode BUILD (0x62): sets the state of an object that takes none"),
        (
            w().array("i4", "<", &[3], &[0; 8], false).done(),
            "shape [3] of 4-byte elements needs 12 bytes, the data holds 8",
        ),
        (w().array("i4", "<", &[65536, 65536, 65536, 65536], &[0; 8], false).done(), "the array's size overflows"),
        (w().array("i4", "<", &[-2], &[], false).done(), "negative dimension -2"),
    ];
    for (bytes, want) in cases {
        let e = refusal(bytes);
        assert!(e.starts_with("t.pkl: byte ") && e.contains(want), "expected {want:?}, got {e}");
    }
}

#[test]
fn bounds_the_stack_the_marks_and_the_memo() {
    // A million NONEs: the stack stops at MAX_STACK.
    let e = refusal(Writer::default().op(&vec![b'N'; MAX_STACK + 1]).done());
    assert!(
        e.contains(&format!("byte {}: opcode NONE (0x4e): the stack grows past {MAX_STACK} values", MAX_STACK + 2)),
        "{e}"
    );
    let e = refusal(Writer::default().op(&[b'('; MAX_MARKS + 1]).done());
    assert!(e.contains(&format!("more than {MAX_MARKS} marks open")), "{e}");
    // Memo keys near 2^32 allocate nothing: a map, not a table.
    let p = parse(Writer::default().op(b"]r\xff\xff\xff\xffj\xff\xff\xff\xff").op(b"a").done()).unwrap();
    assert!(p.adjacency().is_err(), "a list, not a dict");
    // A list appended to itself: a cycle, read without recursing.
    let e =
        parse(Writer::default().op(b"}").op(b"(K\x01]q\x00h\x00a").op(b"u").done()).unwrap().adjacency().unwrap_err();
    assert!(e.to_string().contains("a neighbour of node 1 is not a non-negative integer"), "{e}");
}

#[test]
fn graphs_keep_the_last_list_of_a_repeated_key() {
    let g = Writer::default().global("collections", "defaultdict").global("__builtin__", "list").op(&[0x85, b'R']);
    let g = g.op(b"(K\x00](K\x01K\x02eK\x01]K\x00aK\x00]K\x02au").done();
    assert_eq!(parse(g).unwrap().adjacency().unwrap(), vec![(0, vec![2]), (1, vec![0])]);
}
