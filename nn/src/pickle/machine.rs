//! The opcode machine of [`super::Pickle`]: the opcodes and globals it knows, the values and
//! objects they build, and the checks that keep a hostile input from growing the stack, the
//! marks or memory past what its bytes back. Nothing here calls code the input names: a global is
//! a tag, and `REDUCE`, `NEWOBJ` and `BUILD` accept only the few calls numpy, scipy and
//! `defaultdict` pickles make, building the data those calls would.

use super::{MAX_MARKS, MAX_OBJECTS, MAX_STACK};
use std::collections::HashMap;
use std::ops::Range;

/// The callables and classes a pickle may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Global {
    /// `numpy.core.multiarray._reconstruct(ndarray, shape, dtype)`: an empty array to `BUILD`.
    Reconstruct,
    /// `numpy.ndarray`.
    Ndarray,
    /// `numpy.dtype(descr, align, copy)`.
    Dtype,
    /// `scipy.sparse.csr.csr_matrix`, created with `NEWOBJ` and filled from its `__dict__`.
    CsrMatrix,
    /// `collections.defaultdict(list)`.
    DefaultDict,
    /// `__builtin__.list`, the default factory of the graph's `defaultdict`.
    List,
}

const GLOBALS: [(&str, &str, Global); 6] = [
    ("numpy.core.multiarray", "_reconstruct", Global::Reconstruct),
    ("numpy", "ndarray", Global::Ndarray),
    ("numpy", "dtype", Global::Dtype),
    ("scipy.sparse.csr", "csr_matrix", Global::CsrMatrix),
    ("collections", "defaultdict", Global::DefaultDict),
    ("__builtin__", "list", Global::List),
];

/// A value on the stack or in a container: scalars and strings inline (a string is a range of the
/// input), everything else a handle into the arena.
#[derive(Clone, Debug)]
pub(super) enum Value {
    None,
    Bool(bool),
    Int(i64),
    Str(Range<usize>),
    Global(Global),
    Obj(usize),
}

/// A numpy scalar type: its kind, size in bytes and byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dtype {
    pub(super) kind: u8,
    pub(super) size: usize,
    big_endian: bool,
}

/// The dtypes an array may have: descriptor, kind, size in bytes.
const DTYPES: [(&[u8], u8, usize); 11] = [
    (b"b1", b'u', 1),
    (b"i1", b'i', 1),
    (b"i2", b'i', 2),
    (b"i4", b'i', 4),
    (b"i8", b'i', 8),
    (b"u1", b'u', 1),
    (b"u2", b'u', 2),
    (b"u4", b'u', 4),
    (b"u8", b'u', 8),
    (b"f4", b'f', 4),
    (b"f8", b'f', 8),
];

impl Dtype {
    /// One element's bytes (`size` of them) as a little-endian 8-byte word, zero-extended.
    fn word(self, c: &[u8]) -> [u8; 8] {
        let mut w = [0u8; 8];
        for (k, &b) in c.iter().enumerate() {
            let at = if self.big_endian { c.len() - 1 - k } else { k };
            if let Some(slot) = w.get_mut(at) {
                *slot = b;
            }
        }
        w
    }

    /// An integer element, sign-extended for a signed kind.
    pub(super) fn int(self, c: &[u8]) -> i128 {
        let v = u64::from_le_bytes(self.word(c));
        let shift = 64 - 8 * self.size.min(8) as u32;
        match self.kind {
            b'i' => i128::from((v << shift) as i64 >> shift),
            _ => i128::from(v),
        }
    }

    /// Any element as `f64`.
    pub(super) fn float(self, c: &[u8]) -> f64 {
        let w = self.word(c);
        match (self.kind, self.size) {
            (b'f', 4) => f32::from_le_bytes([w[0], w[1], w[2], w[3]]).into(),
            (b'f', _) => f64::from_le_bytes(w),
            _ => self.int(c) as f64,
        }
    }
}

/// An object of the arena, with the offset of the opcode that created it (for errors).
#[derive(Debug)]
pub(super) enum Object {
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    DefaultDict(Vec<(Value, Value)>),
    Dtype(Dtype),
    /// A `csr_matrix` and the handle of its `__dict__` once built.
    Csr(Option<usize>),
    /// An array: unbuilt (`None`) after `_reconstruct`, then its shape, dtype, order and data.
    Array(Option<ArrayData>),
}

#[derive(Clone, Debug)]
pub(super) struct ArrayData {
    pub(super) shape: Vec<usize>,
    pub(super) dtype: Dtype,
    pub(super) fortran: bool,
    /// The raw elements: a range of the input.
    pub(super) data: Range<usize>,
}

/// The name of an opcode this reader knows, for errors.
fn opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        0x80 => "PROTO",
        b'c' => "GLOBAL",
        b')' => "EMPTY_TUPLE",
        b't' => "TUPLE",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        b']' => "EMPTY_LIST",
        b'a' => "APPEND",
        b'e' => "APPENDS",
        b'}' => "EMPTY_DICT",
        b'u' => "SETITEMS",
        b'(' => "MARK",
        b'N' => "NONE",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'M' => "BININT2",
        b'U' => "SHORT_BINSTRING",
        b'T' => "BINSTRING",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b'h' => "BINGET",
        b'j' => "LONG_BINGET",
        b'R' => "REDUCE",
        0x81 => "NEWOBJ",
        b'b' => "BUILD",
        b'.' => "STOP",
        _ => return None,
    })
}

/// The machine that runs a pickle's opcodes into an arena.
struct Machine<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    objects: Vec<(usize, Object)>,
    /// Offset and opcode being run, for errors.
    at: usize,
    op: u8,
}

impl<'a> Machine<'a> {
    fn fail(&self, what: impl std::fmt::Display) -> String {
        match opcode_name(self.op) {
            Some(name) => format!("opcode {name} (0x{:02x}): {what}", self.op),
            None => format!("opcode 0x{:02x}: {what}", self.op),
        }
    }

    /// The next `n` bytes of the input, refusing `n` past its end.
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.fail(format_args!("needs {n} bytes, {} remain", self.bytes.len() - self.pos)));
        };
        let out = self.bytes.get(self.pos..end).ok_or_else(|| self.fail("out of the input"))?;
        self.pos = end;
        Ok(out)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let b = self.take(N)?;
        b.try_into().map_err(|_| self.fail("short read"))
    }

    /// A newline-terminated line of at most 64 bytes (a `GLOBAL`'s module or name).
    fn line(&mut self) -> Result<&'a str, String> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let Some(n) = rest.iter().take(65).position(|&b| b == b'\n') else {
            return Err(self.fail("a module or class name longer than 64 bytes, or unterminated"));
        };
        let text = self.take(n + 1)?.get(..n).unwrap_or_default();
        std::str::from_utf8(text).map_err(|_| self.fail("a name that is not UTF-8"))
    }

    fn push(&mut self, v: Value) -> Result<(), String> {
        if self.stack.len() >= MAX_STACK {
            return Err(self.fail(format_args!("the stack grows past {MAX_STACK} values")));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value, String> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.fail("pops an empty stack (or past a mark)"));
        }
        self.stack.pop().ok_or_else(|| self.fail("pops an empty stack"))
    }

    /// The values pushed since the last mark, which is closed.
    fn pop_mark(&mut self) -> Result<Vec<Value>, String> {
        let mark = self.marks.pop().ok_or_else(|| self.fail("no mark is open"))?;
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    fn new_object(&mut self, object: Object) -> Result<(), String> {
        if self.objects.len() >= MAX_OBJECTS {
            return Err(self.fail(format_args!("more than {MAX_OBJECTS} objects")));
        }
        self.objects.push((self.at, object));
        self.push(Value::Obj(self.objects.len() - 1))
    }

    /// The object the top of the stack refers to.
    fn top_object(&mut self) -> Result<&mut Object, String> {
        let floor = self.marks.last().copied().unwrap_or(0);
        let handle = match self.stack.last() {
            Some(Value::Obj(h)) if self.stack.len() > floor => *h,
            _ => return Err(self.fail("the value below is not a container or object")),
        };
        let outside = self.fail("a handle outside the arena");
        self.objects.get_mut(handle).map(|o| &mut o.1).ok_or(outside)
    }

    fn object(&self, v: &Value) -> Option<&Object> {
        match v {
            Value::Obj(h) => self.objects.get(*h).map(|o| &o.1),
            _ => None,
        }
    }

    fn str_of(&self, v: &Value) -> Option<&'a [u8]> {
        match v {
            Value::Str(r) => self.bytes.get(r.clone()),
            _ => None,
        }
    }

    /// `numpy.dtype(descr, 0, 1)`: the numeric scalar types.
    fn dtype(&self, args: &[Value]) -> Result<Dtype, String> {
        let descr = match args {
            [d, Value::Int(0) | Value::Bool(false), Value::Int(1) | Value::Bool(true)] => self.str_of(d),
            _ => None,
        };
        let descr = descr.ok_or_else(|| self.fail("dtype's arguments are not (descr, 0, 1)"))?;
        match DTYPES.iter().find(|(d, _, _)| *d == descr) {
            Some(&(_, kind, size)) => Ok(Dtype { kind, size, big_endian: false }),
            None => Err(self.fail(format_args!("dtype {:?} is not a numeric type", String::from_utf8_lossy(descr)))),
        }
    }

    fn reduce(&mut self) -> Result<(), String> {
        let args = self.pop()?;
        let callable = self.pop()?;
        let Some(Object::Tuple(args)) = self.object(&args) else {
            return Err(self.fail("the arguments are not a tuple"));
        };
        let object = match (&callable, args.as_slice()) {
            (Value::Global(Global::Reconstruct), [Value::Global(Global::Ndarray), shape, dtype]) => {
                let ok = matches!(self.object(shape), Some(Object::Tuple(_))) && self.str_of(dtype).is_some();
                if !ok {
                    return Err(self.fail("_reconstruct's arguments are not (ndarray, shape, dtype)"));
                }
                Object::Array(None)
            }
            (Value::Global(Global::Dtype), args) => Object::Dtype(self.dtype(args)?),
            (Value::Global(Global::DefaultDict), [Value::Global(Global::List)]) => Object::DefaultDict(Vec::new()),
            (Value::Global(g), _) => {
                return Err(self.fail(format_args!("{g:?} called with arguments it does not take")))
            }
            _ => return Err(self.fail("calls a value that is not a known global")),
        };
        self.new_object(object)
    }

    fn build(&mut self) -> Result<(), String> {
        let state = self.pop()?;
        let built = match (self.stack.last().and_then(|v| self.object(v)), self.object(&state)) {
            (Some(Object::Array(None)), Some(Object::Tuple(s))) => Object::Array(Some(self.array_state(s)?)),
            (Some(Object::Dtype(d)), Some(Object::Tuple(s))) => Object::Dtype(self.dtype_state(*d, s)?),
            (Some(Object::Csr(None)), Some(Object::Dict(_))) => match state {
                Value::Obj(h) => Object::Csr(Some(h)),
                _ => return Err(self.fail("a csr_matrix's state is not a dict")),
            },
            _ => return Err(self.fail("sets the state of an object that takes none, or takes another")),
        };
        *self.top_object()? = built;
        Ok(())
    }

    /// A dtype's state `(3, order, None, None, None, elsize, alignment, flags)`.
    fn dtype_state(&self, d: Dtype, s: &[Value]) -> Result<Dtype, String> {
        let [Value::Int(3), order, Value::None, Value::None, Value::None, Value::Int(_), Value::Int(_), Value::Int(_)] =
            s
        else {
            return Err(self.fail("a dtype state that is not (3, order, None, None, None, size, align, flags)"));
        };
        let big_endian = match self.str_of(order) {
            Some(b"<" | b"|" | b"=") => false,
            Some(b">") => true,
            _ => return Err(self.fail("a byte order other than <, >, | or =")),
        };
        Ok(Dtype { big_endian, ..d })
    }

    /// An array's state `(1, shape, dtype, is_fortran, raw bytes)`, the bytes exactly the shape's.
    fn array_state(&self, s: &[Value]) -> Result<ArrayData, String> {
        let [Value::Int(1), shape, dtype, Value::Bool(fortran), Value::Str(data)] = s else {
            return Err(self.fail("an array state that is not (1, shape, dtype, fortran, bytes)"));
        };
        let Some(Object::Tuple(dims)) = self.object(shape) else {
            return Err(self.fail("an array shape that is not a tuple"));
        };
        let Some(Object::Dtype(dtype)) = self.object(dtype) else {
            return Err(self.fail("an array dtype that is not a dtype"));
        };
        let mut shape = Vec::new();
        let mut len: usize = dtype.size;
        for d in dims.iter().take(32) {
            let Value::Int(d) = d else { return Err(self.fail("a dimension that is not an integer")) };
            let d = usize::try_from(*d).map_err(|_| self.fail(format_args!("negative dimension {d}")))?;
            len = len.checked_mul(d).ok_or_else(|| self.fail("the array's size overflows"))?;
            shape.push(d);
        }
        if dims.len() > 32 {
            return Err(self.fail("more than 32 dimensions"));
        }
        if len != data.len() {
            return Err(self.fail(format_args!(
                "shape {shape:?} of {}-byte elements needs {len} bytes, the data holds {}",
                dtype.size,
                data.len()
            )));
        }
        Ok(ArrayData { shape, dtype: *dtype, fortran: *fortran, data: data.clone() })
    }

    fn global(&mut self) -> Result<Value, String> {
        let module = self.line()?;
        let name = self.line()?;
        match GLOBALS.iter().find(|(m, n, _)| *m == module && *n == name) {
            Some(&(_, _, g)) => Ok(Value::Global(g)),
            None => Err(self.fail(format_args!("global `{module}.{name}` is not one this reader knows"))),
        }
    }

    /// Runs one opcode; `Ok(Some(result))` at `STOP`.
    fn step(&mut self) -> Result<Option<Value>, String> {
        self.at = self.pos;
        self.op = self.take(1).map(|b| b[0]).map_err(|_| "the input ends before STOP".to_string())?;
        match self.op {
            0x80 => {
                let [v] = self.take_array()?;
                if self.at != 0 || v != 2 {
                    return Err(self.fail(format_args!("protocol {v}; these files are protocol 2, declared first")));
                }
            }
            b'c' => {
                let g = self.global()?;
                self.push(g)?;
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let v = i32::from_le_bytes(self.take_array()?);
                self.push(Value::Int(v.into()))?;
            }
            b'K' => {
                let [v] = self.take_array()?;
                self.push(Value::Int(v.into()))?;
            }
            b'M' => {
                let v = u16::from_le_bytes(self.take_array()?);
                self.push(Value::Int(v.into()))?;
            }
            b'U' | b'T' => {
                let len = if self.op == b'U' {
                    usize::from(self.take_array::<1>()?[0])
                } else {
                    let n = i32::from_le_bytes(self.take_array()?);
                    usize::try_from(n).map_err(|_| self.fail(format_args!("negative length {n}")))?
                };
                let start = self.pos;
                self.take(len)?;
                self.push(Value::Str(start..start + len))?;
            }
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    return Err(self.fail(format_args!("more than {MAX_MARKS} marks open")));
                }
                self.marks.push(self.stack.len());
            }
            b')' => self.new_object(Object::Tuple(Vec::new()))?,
            b't' => {
                let items = self.pop_mark()?;
                self.new_object(Object::Tuple(items))?;
            }
            0x85..=0x87 => {
                let n = usize::from(self.op - 0x84);
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.new_object(Object::Tuple(items))?;
            }
            b']' => self.new_object(Object::List(Vec::new()))?,
            b'}' => self.new_object(Object::Dict(Vec::new()))?,
            b'a' => {
                let v = self.pop()?;
                match self.top_object()? {
                    Object::List(items) => items.push(v),
                    _ => return Err(self.fail("appends to a value that is not a list")),
                }
            }
            b'e' => {
                let values = self.pop_mark()?;
                match self.top_object()? {
                    Object::List(items) => items.extend(values),
                    _ => return Err(self.fail("appends to a value that is not a list")),
                }
            }
            b'u' => {
                let values = self.pop_mark()?;
                if values.len() % 2 != 0 {
                    return Err(self.fail("an odd number of keys and values"));
                }
                let mut it = values.into_iter();
                let pairs = std::iter::from_fn(|| Some((it.next()?, it.next()?)));
                match self.top_object()? {
                    Object::Dict(items) | Object::DefaultDict(items) => items.extend(pairs),
                    _ => return Err(self.fail("sets items of a value that is not a dict")),
                }
            }
            b'q' | b'r' => {
                let key = if self.op == b'q' {
                    self.take_array::<1>()?[0].into()
                } else {
                    u32::from_le_bytes(self.take_array()?)
                };
                let top = self.stack.last().cloned().ok_or_else(|| self.fail("memoises an empty stack"))?;
                self.memo.insert(key, top);
            }
            b'h' | b'j' => {
                let key = if self.op == b'h' {
                    self.take_array::<1>()?[0].into()
                } else {
                    u32::from_le_bytes(self.take_array()?)
                };
                let v =
                    self.memo.get(&key).cloned().ok_or_else(|| self.fail(format_args!("memo {key} was never set")))?;
                self.push(v)?;
            }
            b'R' => self.reduce()?,
            0x81 => {
                let args = self.pop()?;
                let cls = self.pop()?;
                let empty = matches!(self.object(&args), Some(Object::Tuple(a)) if a.is_empty());
                if !(empty && matches!(cls, Value::Global(Global::CsrMatrix))) {
                    return Err(self.fail("creates an object other than csr_matrix()"));
                }
                self.new_object(Object::Csr(None))?;
            }
            b'b' => self.build()?,
            b'.' => {
                let result = self.pop()?;
                if !self.stack.is_empty() || !self.marks.is_empty() {
                    return Err(self.fail("values or marks are left on the stack"));
                }
                if self.pos != self.bytes.len() {
                    return Err(self.fail(format_args!("{} bytes follow STOP", self.bytes.len() - self.pos)));
                }
                return Ok(Some(result));
            }
            _ => return Err(self.fail("not an opcode of the pickles this reader knows")),
        }
        Ok(None)
    }
}

/// What a run leaves: the arena of objects (each with the offset that made it) and the result.
pub(super) type Run = (Vec<(usize, Object)>, Value);

/// Runs `bytes` to its `STOP`: the arena and the result, or the offset and what is wrong there.
pub(super) fn run(bytes: &[u8]) -> Result<Run, (usize, String)> {
    let mut m = Machine {
        bytes,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        objects: Vec::new(),
        at: 0,
        op: 0,
    };
    loop {
        match m.step() {
            Ok(Some(root)) => return Ok((m.objects, root)),
            Ok(None) => {}
            Err(what) => return Err((m.at, what)),
        }
    }
}
