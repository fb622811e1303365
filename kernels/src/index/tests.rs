//! The tests of `index`, beside it in a file of their own.

use super::*;

#[test]
fn widening_keeps_the_type_when_it_holds_the_index() {
    assert_eq!(IndexType::I8.widened_for(127), IndexType::I8);
    assert_eq!(IndexType::I8.widened_for(128), IndexType::I16);
    assert_eq!(IndexType::I16.widened_for(299), IndexType::I16);
    assert_eq!(IndexType::I32.widened_for(3), IndexType::I32);
    assert_eq!(IndexType::I8.widened_for(1 << 40), IndexType::I64);
    assert_eq!(IndexType::I64.widened_for(u64::MAX), IndexType::I64);
}
