//! Literal tests: plain and typed values of every type as parsed, their type names, and the kernel
//! values (`to_value`) they turn into.

use serde_json::{Value as Json, json};
use tomii_types::abi::*;
use tomii_types::kernel::ValueRef;

use super::{compile, nodes};
use crate::graph::{Literal, LiteralType};

/// The constants of a single node whose arguments are `args`.
fn consts(args: Json) -> Vec<Literal> {
    compile(nodes(json!([{"name": "gen", "function": "f", "args": args}]))).consts
}

fn typed(ty: &str, value: Json) -> Literal {
    let mut all = consts(json!([{"type": ty, "value": value}]));
    assert_eq!(all.len(), 1);
    all.remove(0)
}

#[test]
fn plain_values_are_inferred() {
    let got = consts(json!([4, -3, 1.5, true, "text", 18446744073709551615u64]));
    let want = [
        Literal::Usize(4),
        Literal::I64(-3),
        Literal::F64(1.5),
        Literal::Bool(true),
        Literal::Str("text".into()),
        Literal::Usize(u64::MAX),
    ];
    assert_eq!(got, want);
}

#[test]
fn every_scalar_type() {
    let cases = [
        ("i8", json!(-128), Literal::I8(-128)),
        ("i16", json!(-32768), Literal::I16(-32768)),
        ("i32", json!(2147483647), Literal::I32(i32::MAX)),
        ("i64", json!(i64::MIN), Literal::I64(i64::MIN)),
        ("i128", json!(-5), Literal::I128(-5)),
        ("i128", json!("-170141183460469231731687303715884105728"), Literal::I128(i128::MIN)),
        ("u8", json!(255), Literal::U8(255)),
        ("u16", json!(65535), Literal::U16(65535)),
        ("u32", json!(4294967295u32), Literal::U32(u32::MAX)),
        ("u64", json!(u64::MAX), Literal::U64(u64::MAX)),
        ("u128", json!("340282366920938463463374607431768211455"), Literal::U128(u128::MAX)),
        ("u128", json!(12), Literal::U128(12)),
        ("usize", json!(100), Literal::Usize(100)),
        ("isize", json!(-100), Literal::Isize(-100)),
        ("f32", json!(1.5), Literal::F32(1.5)),
        ("f32", json!(3), Literal::F32(3.0)),
        ("f64", json!(-0.25), Literal::F64(-0.25)),
        ("bool", json!(false), Literal::Bool(false)),
        ("char", json!("é"), Literal::Char('é')),
        ("String", json!("hello"), Literal::Str("hello".into())),
        ("Complex32", json!([1.0, -2.0]), Literal::C32([1.0, -2.0])),
        ("Complex64", json!([3.5, 2.5]), Literal::C64([3.5, 2.5])),
    ];
    for (ty, value, want) in cases {
        let got = typed(ty, value);
        assert_eq!(got, want, "type {ty}");
        assert_eq!(got.type_name(), ty);
    }
}

#[test]
fn vectors() {
    let v = typed("Vec<f32>", json!([1.0, 2.5]));
    assert_eq!(v, Literal::Vec(LiteralType::F32, vec![Literal::F32(1.0), Literal::F32(2.5)]));
    assert_eq!(v.type_name(), "Vec<f32>");
    assert_eq!(typed("Vec<u8>", json!([])), Literal::Vec(LiteralType::U8, vec![]));
    assert_eq!(typed("Vec< bool >", json!([true])), Literal::Vec(LiteralType::Bool, vec![Literal::Bool(true)]));
    let c = typed("Vec<Complex64>", json!([[1, 2]]));
    assert_eq!(c, Literal::Vec(LiteralType::C64, vec![Literal::C64([1.0, 2.0])]));
}

#[test]
fn as_u64() {
    assert_eq!(Literal::U8(3).as_u64(), Some(3));
    assert_eq!(Literal::I32(-1).as_u64(), None);
    assert_eq!(Literal::I64(9).as_u64(), Some(9));
    assert_eq!(Literal::U128(u128::MAX).as_u64(), None);
    assert_eq!(Literal::F64(1.0).as_u64(), None);
    assert_eq!(Literal::Str("1".into()).as_u64(), None);
}

#[test]
fn scalar_values_carry_their_tag() {
    let cases = [
        (Literal::Bool(true), TOMII_TAG_BOOL, ValueRef::Bool(true)),
        (Literal::I8(-2), TOMII_TAG_I8, ValueRef::Int(-2)),
        (Literal::I16(-3), TOMII_TAG_I16, ValueRef::Int(-3)),
        (Literal::I32(-4), TOMII_TAG_I32, ValueRef::Int(-4)),
        (Literal::I64(-5), TOMII_TAG_I64, ValueRef::Int(-5)),
        (Literal::Isize(-6), TOMII_TAG_ISIZE, ValueRef::Int(-6)),
        (Literal::I128(-7), TOMII_TAG_I128, ValueRef::I128(-7)),
        (Literal::U8(8), TOMII_TAG_U8, ValueRef::UInt(8)),
        (Literal::U16(9), TOMII_TAG_U16, ValueRef::UInt(9)),
        (Literal::U32(10), TOMII_TAG_U32, ValueRef::UInt(10)),
        (Literal::U64(11), TOMII_TAG_U64, ValueRef::UInt(11)),
        (Literal::Usize(12), TOMII_TAG_USIZE, ValueRef::UInt(12)),
        (Literal::U128(u128::MAX), TOMII_TAG_U128, ValueRef::U128(u128::MAX)),
        (Literal::F32(1.5), TOMII_TAG_F32, ValueRef::F32(1.5)),
        (Literal::F64(2.5), TOMII_TAG_F64, ValueRef::F64(2.5)),
        (Literal::C32([1.0, 2.0]), TOMII_TAG_C32, ValueRef::C32([1.0, 2.0])),
        (Literal::C64([3.0, 4.0]), TOMII_TAG_C64, ValueRef::C64([3.0, 4.0])),
        (Literal::Char('x'), TOMII_TAG_CHAR, ValueRef::Char('x')),
        (Literal::Str("hi".into()), TOMII_TAG_STR, ValueRef::Str("hi")),
    ];
    for (literal, tag, view) in cases {
        let value = literal.to_value();
        assert_eq!(value.as_raw().tag, tag, "{literal:?}");
        assert_eq!(value.view(), view, "{literal:?}");
    }
}

#[test]
fn vector_values() {
    let v = Literal::Vec(LiteralType::F32, vec![Literal::F32(1.0), Literal::F32(2.5)]).to_value();
    assert_eq!((v.as_raw().tag, v.as_raw().elem), (TOMII_TAG_ARRAY, TOMII_TAG_F32));
    let bytes: Vec<u8> = [1.0f32, 2.5].iter().flat_map(|f| f.to_ne_bytes()).collect();
    assert_eq!(v.view(), ValueRef::Array(TOMII_TAG_F32, &bytes));

    let flags = Literal::Vec(LiteralType::Bool, vec![Literal::Bool(true), Literal::Bool(false)]).to_value();
    assert_eq!(flags.view(), ValueRef::Array(TOMII_TAG_U8, &[1, 0]));

    let empty = Literal::Vec(LiteralType::U16, vec![]).to_value();
    assert_eq!(empty.view(), ValueRef::Array(TOMII_TAG_U16, &[]));

    let c = Literal::Vec(LiteralType::C64, vec![Literal::C64([1.0, 2.0])]).to_value();
    assert_eq!(c.as_raw().elem, TOMII_TAG_C64);

    let words = Literal::Vec(LiteralType::Str, vec![Literal::Str("a".into()), Literal::Str("b".into())]);
    let value = words.to_value();
    let ValueRef::List(items) = value.view() else { panic!("expected a list") };
    assert_eq!(items.iter().collect::<Vec<_>>(), [ValueRef::Str("a"), ValueRef::Str("b")]);
}
