//! How `#[tomii_export]` reads a signature: what each parameter takes from the host's arguments and
//! how the result goes back. The attribute sees tokens only, so it classifies types by their last
//! path segment: the value types it knows by name convert through `FromArg`/`IntoValue`; any other
//! named type is an opaque object. It never sees through aliases (the attribute's documentation says so).

use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, ReturnType, Type, TypePath};

/// The names of the types that cross as values (scalars, strings, arrays, the safe views), each
/// converted by a trait of `tomii_types::export`; every other named type is an opaque object.
const VALUE_TYPES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
    "char", "String", "Vec", "Option", "Value", "ValueRef", "Args",
];

/// What one parameter of the function receives.
pub enum Param {
    /// `&CallCtx`: the call's context, not a graph argument.
    Context,
    /// A value converted by `FromArg` and passed as is (`u32`, `&str`, `&[f32]`, `Vec<f64>`...).
    Value(Type),
    /// `&T` of a value type (`&String`, `&Vec<f32>`): converted by `FromArg`, passed borrowed.
    Borrowed(Type),
    /// `&T` of any other type: an OBJECT made by a kernel returning `T`.
    Object(Type),
    /// The last parameter of a variadic kernel: the trailing results, each item converted by
    /// `FromArg`; `borrowed` for `&[T]`, owned for `Vec<T>`.
    List { item: Type, borrowed: bool },
}

/// How the function's result becomes a value.
pub enum Output {
    /// Through `IntoValue` (including `()`).
    Value,
    /// An opaque object of this type.
    Object,
}

/// The result's conversion and whether it is a `Result` whose error fails the call.
pub struct Return {
    pub output: Output,
    pub fallible: bool,
}

/// `ty` without the invisible groups and parentheses that macro expansion may wrap it in.
fn bare(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => bare(&group.elem),
        Type::Paren(paren) => bare(&paren.elem),
        other => other,
    }
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match bare(ty) {
        Type::Path(TypePath { qself: None, path }) => path.segments.last(),
        _ => None,
    }
}

fn named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident == name)
}

fn is_value_type(ty: &Type) -> bool {
    match bare(ty) {
        Type::Array(_) | Type::Tuple(_) => true,
        other => last_segment(other).is_some_and(|segment| VALUE_TYPES.iter().any(|name| segment.ident == name)),
    }
}

/// The first type argument of a path type (`T` of `Vec<T>` or `Result<T, E>`).
fn first_type_argument(ty: &Type) -> Option<&Type> {
    let PathArguments::AngleBracketed(arguments) = &last_segment(ty)?.arguments else {
        return None;
    };
    arguments.args.iter().find_map(|argument| match argument {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// What a parameter of type `ty` receives; `list` for the last parameter of a variadic kernel.
pub fn param(ty: &Type, list: bool) -> syn::Result<Param> {
    if list {
        return list_param(ty);
    }
    let Type::Reference(reference) = bare(ty) else {
        if is_value_type(ty) {
            return Ok(Param::Value(ty.clone()));
        }
        let message = "an opaque object is borrowed from the host: take it as `&T`";
        return Err(syn::Error::new(ty.span(), message));
    };
    if reference.mutability.is_some() {
        let message = "arguments are borrowed from the host and read-only: take `&T`, not `&mut T`";
        return Err(syn::Error::new(ty.span(), message));
    }
    let inner = bare(&reference.elem);
    Ok(match inner {
        Type::Path(_) if named(inner, "str") => Param::Value(ty.clone()),
        Type::Slice(_) => Param::Value(ty.clone()),
        Type::Path(_) if named(inner, "CallCtx") => Param::Context,
        Type::Path(_) if is_value_type(inner) => Param::Borrowed(inner.clone()),
        Type::Path(_) => Param::Object(inner.clone()),
        _ => return Err(syn::Error::new(ty.span(), "unsupported parameter type for #[tomii_export]")),
    })
}

/// The list parameter of a variadic kernel: `&[T]`, `Vec<T>`, `Args` or `&Args`.
fn list_param(ty: &Type) -> syn::Result<Param> {
    let wrong = || {
        let message =
            "the last parameter of a variadic kernel receives the trailing results: make it `&[T]`, `Vec<T>` or `Args`";
        syn::Error::new(ty.span(), message)
    };
    match bare(ty) {
        Type::Reference(reference) => match bare(&reference.elem) {
            Type::Slice(slice) => Ok(Param::List { item: (*slice.elem).clone(), borrowed: true }),
            inner if named(inner, "Args") => Ok(Param::Borrowed(inner.clone())),
            _ => Err(wrong()),
        },
        other if named(other, "Args") => Ok(Param::Value(other.clone())),
        other if named(other, "Vec") => {
            let item = first_type_argument(other).ok_or_else(wrong)?;
            Ok(Param::List { item: item.clone(), borrowed: false })
        }
        _ => Err(wrong()),
    }
}

/// How the function's declared result converts.
pub fn output(returns: &ReturnType) -> syn::Result<Return> {
    let ReturnType::Type(_, ty) = returns else {
        return Ok(Return { output: Output::Value, fallible: false });
    };
    if named(ty, "Result") {
        let ok = first_type_argument(ty)
            .ok_or_else(|| syn::Error::new(ty.span(), "write the result type out: `Result<T, E>`"))?;
        return Ok(Return { output: owned_output(ok)?, fallible: true });
    }
    Ok(Return { output: owned_output(ty)?, fallible: false })
}

fn owned_output(ty: &Type) -> syn::Result<Output> {
    match bare(ty) {
        other if is_value_type(other) => Ok(Output::Value),
        Type::Path(_) => Ok(Output::Object),
        _ => {
            let message = "a kernel returns an owned value (the host keeps it after the call), not a reference";
            Err(syn::Error::new(ty.span(), message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_of(text: &str, list: bool) -> syn::Result<Param> {
        param(&syn::parse_str(text).unwrap(), list)
    }

    fn kind(result: syn::Result<Param>) -> String {
        match result {
            Ok(Param::Context) => "context".into(),
            Ok(Param::Value(_)) => "value".into(),
            Ok(Param::Borrowed(_)) => "borrowed".into(),
            Ok(Param::Object(_)) => "object".into(),
            Ok(Param::List { borrowed, .. }) => format!("list borrowed={borrowed}"),
            Err(error) => format!("error: {error}"),
        }
    }

    #[test]
    fn parameters_are_classified_by_name() {
        for (text, expected) in [
            ("u8", "value"),
            ("[f32; 2]", "value"),
            ("&str", "value"),
            ("&[[f64; 2]]", "value"),
            ("Vec<i64>", "value"),
            ("&CallCtx", "context"),
            ("&tomii_types::kernel::CallCtx<'_>", "context"),
            ("&String", "borrowed"),
            ("&FftPlanner", "object"),
            ("&crate::plan::Plan", "object"),
        ] {
            assert_eq!(kind(param_of(text, false)), expected, "{text}");
        }
        assert!(kind(param_of("&mut Plan", false)).contains("not `&mut T`"));
        assert!(kind(param_of("Plan", false)).contains("borrowed from the host"));
    }

    #[test]
    fn variadic_lists_are_slices_vectors_or_args() {
        assert_eq!(kind(param_of("&[ValueRef]", true)), "list borrowed=true");
        assert_eq!(kind(param_of("Vec<&[f32]>", true)), "list borrowed=false");
        assert_eq!(kind(param_of("Args", true)), "value");
        assert_eq!(kind(param_of("&Args", true)), "borrowed");
        assert!(kind(param_of("u32", true)).contains("trailing results"));
    }

    #[test]
    fn results_are_values_objects_or_fallible() {
        let of = |text: &str| output(&syn::parse_str::<ReturnType>(text).unwrap());
        assert!(matches!(of(""), Ok(Return { output: Output::Value, fallible: false })));
        assert!(matches!(of("-> Vec<[f32; 2]>"), Ok(Return { output: Output::Value, fallible: false })));
        assert!(matches!(of("-> FftPlanner"), Ok(Return { output: Output::Object, fallible: false })));
        assert!(matches!(of("-> Result<f64, String>"), Ok(Return { output: Output::Value, fallible: true })));
        assert!(matches!(of("-> std::io::Result<Plan>"), Ok(Return { output: Output::Object, fallible: true })));
        assert!(of("-> &'static str").is_err());
    }
}
