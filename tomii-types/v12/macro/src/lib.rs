//! Tomii 1.2's `#[tomii_export]`, for 1.2 plugin crates built unchanged (`tomii.build` maps their
//! `tomii-macro` dependency here). The function stays as written; beside it the attribute adds a
//! C-ABI shim that reads each parameter as 1.2 passed it (through `tomii_types::__rt`, the
//! runtime half in tomii12-types) and a registration the library's registry collects.
//!
//! Options, as in 1.2: the words `variadic` and `bulk` anywhere in the parentheses; other words
//! are ignored. Types are classified by their last path segment (the attribute sees tokens only).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, LitCStr, LitStr, ReturnType, Type};

/// Exports a plain function as a kernel, with Tomii 1.2's meanings:
///
/// | parameter | receives |
/// |---|---|
/// | `bool`, integers, `f32`, `f64`, `char`, `&str`, `String` | that value (integers that fit, any number for floats) |
/// | `Complex32`, `Complex64` | a complex value |
/// | `&T` (`&Vec<f64>`, `&[T]`, `&DMatrix<..>`, `&Arc<dyn Fft<f32>>`...) | the shared object, under its read lock: no copy |
/// | `&mut T` | the shared object under its write lock, mutated in place: every other consumer sees it |
/// | owned `T` of another type | a clone of the shared object |
/// | `&CmTypes`, `CmTypes` | the value as 1.2's `CmTypes` |
/// | last, with `variadic`: `Vec<T>` | every argument from its position on (numbers converted with `as`, objects cloned) |
///
/// A result of a primitive type, `String`, `()` or `CmTypes` is that value; anything else is
/// boxed as a shared object (1.2's `CmTypes::Any`). `bulk` changes nothing here: each instance
/// calls the function (this runtime has no bulk call per range of instances).
#[proc_macro_attribute]
pub fn tomii_export(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into()).unwrap_or_else(syn::Error::into_compile_error).into()
}

const PRIMITIVES: &[&str] = &[
    "bool", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64",
    "char",
];

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    // 1.2 looked for the words anywhere in the attribute's text.
    let words = attr.to_string();
    let variadic = words.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "variadic");
    let function: ItemFn = syn::parse2(item)
        .map_err(|error| syn::Error::new(error.span(), "#[tomii_export] goes on a free function (`fn name(...)`)"))?;
    let name = function.sig.ident.to_string();
    let mut names = Vec::new();
    let mut reads = Vec::new();
    let mut call_args = Vec::new();
    let count = function.sig.inputs.len();
    for (index, input) in function.sig.inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new(input.span(), "#[tomii_export] goes on a free function, not a method"));
        };
        let local = syn::Ident::new(&format!("arg{index}"), Span::call_site());
        let last = variadic && index + 1 == count;
        let (read, call) =
            if last { variadic_param(&typed.ty, index, &local)? } else { param(&typed.ty, index, &local)? };
        names.push(LitStr::new(&parameter_name(&typed.pat, index), Span::call_site()));
        reads.push(read);
        call_args.push(call);
    }
    if variadic && count == 0 {
        return Err(syn::Error::new(function.sig.span(), "`variadic`: the last parameter must be `Vec<T>`"));
    }
    let ident = &function.sig.ident;
    let result = output(&function.sig.output, quote!(#ident(#(#call_args),*)));
    let cname =
        LitCStr::new(&std::ffi::CString::new(name.clone()).expect("an identifier has no NUL"), Span::call_site());
    let kernel = LitStr::new(&name, Span::call_site());
    let cfgs = function.attrs.iter().filter(|attr| attr.path().is_ident("cfg"));
    Ok(quote! {
        #function

        #(#cfgs)*
        #[doc(hidden)]
        const _: () = {
            static SIGNATURE: ::tomii_types::__rt::Signature12 =
                ::tomii_types::__rt::Signature12 { kernel: #kernel, params: &[#(#names),*] };

            #[allow(unsafe_code, unused_mut, clippy::all)]
            unsafe extern "C" fn shim(
                args: *const ::tomii_types::__rt::TomiiValue,
                nargs: usize,
                out: *mut ::tomii_types::__rt::TomiiValue,
                ctx: *const ::tomii_types::__rt::TomiiCallCtx,
            ) -> i32 {
                // SAFETY: the host calls a kernel with pointers valid as the kernel ABI describes,
                // which is `call`'s contract.
                unsafe {
                    ::tomii_types::__rt::call(args, nargs, out, ctx, &SIGNATURE, |a| {
                        #(#reads)*
                        ::core::result::Result::Ok(#result)
                    })
                }
            }

            ::tomii_types::__private::inventory::submit! {
                ::tomii_types::__rt::Registration::new(#cname, shim, false)
            }
        };
    })
}

fn bare(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => bare(&group.elem),
        Type::Paren(paren) => bare(&paren.elem),
        other => other,
    }
}

fn last_name(ty: &Type) -> Option<String> {
    match bare(ty) {
        Type::Path(path) => path.path.segments.last().map(|segment| segment.ident.to_string()),
        _ => None,
    }
}

fn is_named(ty: &Type, names: &[&str]) -> bool {
    last_name(ty).is_some_and(|name| names.contains(&name.as_str()))
}

fn first_type_argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = bare(ty) else { return None };
    let syn::PathArguments::AngleBracketed(arguments) = &path.path.segments.last()?.arguments else {
        return None;
    };
    arguments.args.iter().find_map(|argument| match argument {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// How one parameter is read (a statement binding `local`) and passed to the function.
fn param(ty: &Type, index: usize, local: &syn::Ident) -> syn::Result<(TokenStream2, TokenStream2)> {
    let guard = syn::Ident::new(&format!("{local}_guard"), Span::call_site());
    Ok(match bare(ty) {
        Type::Reference(reference) => {
            let inner = bare(&reference.elem);
            let slice = match inner {
                Type::Slice(slice) => Some(&*slice.elem),
                _ => None,
            };
            match (reference.mutability.is_some(), slice) {
                (true, Some(item)) => (
                    quote!(let mut #guard = a.write(#index)?;),
                    quote!(#guard.get_mut::<::std::vec::Vec<#item>>()?.as_mut_slice()),
                ),
                (true, None) => (quote!(let mut #guard = a.write(#index)?;), quote!(#guard.get_mut::<#inner>()?)),
                (false, _) if is_named(inner, &["str"]) => {
                    (quote!(let #local: &str = a.value(#index)?;), quote!(#local))
                }
                (false, _) if is_named(inner, &["CmTypes"]) => (quote!(let #local = a.cm(#index)?;), quote!(&#local)),
                (false, Some(item)) => {
                    (quote!(let #guard = a.read(#index)?;), quote!(#guard.get::<::std::vec::Vec<#item>>()?.as_slice()))
                }
                (false, None) => (quote!(let #guard = a.read(#index)?;), quote!(#guard.get::<#inner>()?)),
            }
        }
        other if is_named(other, PRIMITIVES) || is_named(other, &["String"]) => {
            (quote!(let #local: #other = a.value(#index)?;), quote!(#local))
        }
        other if is_named(other, &["Complex32", "C32"]) => {
            (quote!(let #local = a.complex32(#index)?;), quote!(#local.into()))
        }
        other if is_named(other, &["Complex64", "C64"]) => {
            (quote!(let #local = a.complex64(#index)?;), quote!(#local.into()))
        }
        other if is_named(other, &["CmTypes"]) => (quote!(let #local = a.cm(#index)?;), quote!(#local)),
        other => (
            quote!(let #local: #other = ::core::clone::Clone::clone(a.read(#index)?.get::<#other>()?);),
            quote!(#local),
        ),
    })
}

/// The last parameter of a variadic kernel: `Vec<T>`, every argument from `index` on.
fn variadic_param(ty: &Type, index: usize, local: &syn::Ident) -> syn::Result<(TokenStream2, TokenStream2)> {
    let item = match bare(ty) {
        other if is_named(other, &["Vec"]) => first_type_argument(other),
        _ => None,
    }
    .ok_or_else(|| syn::Error::new(ty.span(), "`variadic`: the last parameter must be `Vec<T>`"))?;
    let read = if is_named(item, PRIMITIVES) && !is_named(item, &["bool", "char", "i128", "u128"]) {
        quote!(let #local: ::std::vec::Vec<#item> = a.numbers::<#item>(#index)?;)
    } else if is_named(item, &["String"]) {
        quote!(let #local = a.strings(#index)?;)
    } else if is_named(item, &["CmTypes"]) {
        quote!(let #local = a.cm_tail(#index)?;)
    } else {
        quote!(let #local: ::std::vec::Vec<#item> = a.objects::<#item>(#index)?;)
    };
    Ok((read, quote!(#local)))
}

/// The expression turning the call's result into a value.
fn output(returns: &ReturnType, call: TokenStream2) -> TokenStream2 {
    let ReturnType::Type(_, ty) = returns else {
        return quote!({ #call; ::tomii_types::__rt::Value::none() });
    };
    match bare(ty) {
        Type::Tuple(tuple) if tuple.elems.is_empty() => quote!({ #call; ::tomii_types::__rt::Value::none() }),
        other if is_named(other, PRIMITIVES) || is_named(other, &["String"]) => {
            quote!(::tomii_types::__rt::IntoValue::into_value(#call))
        }
        other if is_named(other, &["Complex32", "C32"]) => {
            quote!({ let c: ::tomii_types::Complex32 = (#call).into(); ::tomii_types::__rt::IntoValue::into_value([c.re, c.im]) })
        }
        other if is_named(other, &["Complex64", "C64"]) => {
            quote!({ let c: ::tomii_types::Complex64 = (#call).into(); ::tomii_types::__rt::IntoValue::into_value([c.re, c.im]) })
        }
        other if is_named(other, &["CmTypes"]) => quote!(::tomii_types::__rt::into_value(#call)),
        _ => quote!(::tomii_types::__rt::object_value(::tomii_types::CmTypes::from_any(#call))),
    }
}

fn parameter_name(pattern: &syn::Pat, index: usize) -> String {
    match pattern {
        syn::Pat::Ident(ident) => ident.ident.to_string(),
        _ => format!("#{index}"),
    }
}
