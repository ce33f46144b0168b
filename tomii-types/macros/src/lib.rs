//! `#[tomii_export]`: a plain Rust function becomes a Tomii kernel. The attribute keeps the function
//! as written and adds, beside it, a safe wrapper that converts the host's arguments (with messages
//! naming the kernel, the argument and the expected and found types), a C-ABI shim that catches
//! panics, and a registration that `tomii_types::kernel_library!` collects into the registry.
//!
//! Use it through `tomii_types::tomii_export`: the expansion names `::tomii_types` paths. It never
//! emits `unsafe` beyond the one shim call whose contract the kernel ABI states.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
// `unraw`: `r#type` is the kernel `type`.
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, LitCStr, LitStr};

mod types;

use types::{Output, Param};

/// Exports a plain function as a Tomii kernel, registered under its name; the crate's root calls
/// `tomii_types::kernel_library!("name");` once to export the registry of all of them.
///
/// ```ignore
/// #[tomii_export]
/// fn compute_fft(planner: &FftPlanner, v: &[[f32; 2]]) -> Result<Vec<[f32; 2]>, String> { ... }
/// ```
///
/// Options: `name = "other"` registers it under another name; `variadic` makes the last
/// parameter receive the node's trailing results as one list.
///
/// | parameter | receives |
/// |---|---|
/// | `u8` … `u128`, `i8` … `i128`, `usize`, `isize` | any integer argument that fits |
/// | `f32`, `f64` | any number |
/// | `bool`, `char`, `&str`, `String` | that value |
/// | `[f32; 2]`, `[f64; 2]` | a complex number (re, im) |
/// | `&[T]`, `Vec<T>` (T an integer, float or complex) | a typed array |
/// | `ValueRef`, `Args` | the raw value; a list |
/// | `&T`, any other named type `T` | an opaque object returned as `T` by another kernel (its type id is checked) |
/// | `&CallCtx` | the call's context (node, instance, frame); not a graph argument |
/// | last, with `variadic`: `&[T]`, `Vec<T>`, `Args` | the trailing results, each item converted to `T` |
///
/// A result is `()`, one of the value types above (`Vec<T>` for arrays, `Option<T>` with `None`
/// as no value), `Value`, or any other named type, which becomes an opaque object; a `Result<T, E>`
/// with `E: Display` fails the call with the error's message. Types are recognised by name: write
/// `Vec<[f32; 2]>`, not an alias of it. A panic fails the call; it never crosses the boundary.
#[proc_macro_attribute]
pub fn tomii_export(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into()).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// The attribute's options.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    variadic: bool,
}

impl Options {
    fn parse(attr: TokenStream2) -> syn::Result<Options> {
        let mut options = Options::default();
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("variadic") {
                options.variadic = true;
                Ok(())
            } else if meta.path.is_ident("name") {
                options.name = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta.error("unknown #[tomii_export] option: expected `variadic` or `name = \"...\"`"))
            }
        });
        syn::parse::Parser::parse2(parser, attr)?;
        Ok(options)
    }
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let options = Options::parse(attr)?;
    let function: ItemFn = syn::parse2(item)
        .map_err(|error| syn::Error::new(error.span(), "#[tomii_export] goes on a free function (`fn name(...)`)"))?;
    check_signature(&function.sig)?;
    let name = kernel_name(&function, &options)?;
    let wrapper = wrapper(&function, &name.value(), options.variadic)?;
    let cname = LitCStr::new(&std::ffi::CString::new(name.value()).expect("checked by kernel_name"), name.span());
    let variadic = options.variadic;
    // The function's own `cfg`s, so that a configured-out kernel takes its wrapper with it.
    let cfgs = function.attrs.iter().filter(|attr| attr.path().is_ident("cfg"));
    Ok(quote! {
        #function

        #(#cfgs)*
        #[doc(hidden)]
        const _: () = {
            #wrapper

            #[allow(unsafe_code)]
            unsafe extern "C" fn shim(
                args: *const ::tomii_types::abi::TomiiValue,
                nargs: usize,
                out: *mut ::tomii_types::abi::TomiiValue,
                ctx: *const ::tomii_types::abi::TomiiCallCtx,
            ) -> i32 {
                // SAFETY: the host calls a kernel with pointers valid as the kernel ABI describes,
                // which is `call`'s contract.
                unsafe { ::tomii_types::kernel::call(args, nargs, out, ctx, safe) }
            }

            ::tomii_types::__private::inventory::submit! {
                ::tomii_types::export::Registration::new(#cname, shim, #variadic)
            }
        };
    })
}

/// Rejects what a kernel cannot be: generic over types, async, unsafe, a method or a C function.
fn check_signature(sig: &syn::Signature) -> syn::Result<()> {
    let problem = if sig.asyncness.is_some() {
        Some("a kernel runs to completion on a worker: it cannot be `async`")
    } else if sig.unsafety.is_some() {
        Some("a kernel is called with checked arguments: it cannot be `unsafe fn`")
    } else if sig.abi.is_some() || sig.variadic.is_some() {
        Some("write a plain Rust function: #[tomii_export] makes its C ABI")
    } else if sig.generics.type_params().next().is_some() || sig.generics.const_params().next().is_some() {
        Some("a kernel cannot be generic: the registry needs one concrete function")
    } else {
        None
    };
    match problem {
        Some(message) => Err(syn::Error::new(sig.span(), message)),
        None => Ok(()),
    }
}

/// The registry name: `name = "..."` or the function's own name.
fn kernel_name(function: &ItemFn, options: &Options) -> syn::Result<LitStr> {
    let name = match &options.name {
        Some(name) => name.clone(),
        None => LitStr::new(function.sig.ident.unraw().to_string().as_str(), function.sig.ident.span()),
    };
    if name.value().is_empty() || name.value().contains('\0') {
        return Err(syn::Error::new(name.span(), "a kernel name is non-empty text without NUL characters"));
    }
    Ok(name)
}

/// The safe wrapper `fn safe(&CallCtx, &Args) -> Result<Value, KernelError>`: checks the number of
/// arguments, converts each one, calls the function and converts its result.
fn wrapper(function: &ItemFn, kernel: &str, variadic: bool) -> syn::Result<TokenStream2> {
    let inputs = &function.sig.inputs;
    let mut names = Vec::new();
    let mut conversions = Vec::new();
    let mut call_args = Vec::new();
    let mut uses_context = false;
    for (position, input) in inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new(input.span(), "#[tomii_export] goes on a free function, not a method"));
        };
        let last = variadic && position + 1 == inputs.len();
        let index = names.len();
        let local = format_ident!("arg{}", index);
        let (conversion, call) = match types::param(&typed.ty, last)? {
            Param::Context => {
                uses_context = true;
                call_args.push(quote!(ctx));
                continue;
            }
            Param::Value(ty) => (quote!(SIGNATURE.arg::<#ty>(args, #index)?), quote!(#local)),
            Param::Borrowed(ty) => (quote!(SIGNATURE.arg::<#ty>(args, #index)?), quote!(&#local)),
            Param::Object(ty) => (quote!(SIGNATURE.object::<#ty>(args, #index)?), quote!(#local)),
            Param::List { item, borrowed } => {
                let call = if borrowed { quote!(&#local) } else { quote!(#local) };
                (quote!(SIGNATURE.list::<#item>(args, #index)?), call)
            }
        };
        names.push(parameter_name(&typed.pat, index));
        conversions.push(quote!(let #local = #conversion;));
        call_args.push(call);
    }
    if variadic && names.is_empty() {
        let message = "a variadic kernel needs a last parameter for the list of trailing results";
        return Err(syn::Error::new(function.sig.span(), message));
    }
    let returns = types::output(&function.sig.output)?;
    let ident = &function.sig.ident;
    let call = quote!(#ident(#(#call_args),*));
    let convert = |value: TokenStream2| match returns.output {
        Output::Value => quote!(::tomii_types::export::IntoValue::into_value(#value)),
        Output::Object => quote!(::tomii_types::export::object_value(#value)),
    };
    let body = if returns.fallible {
        let ok = convert(quote!(value));
        quote! {
            match #call {
                ::core::result::Result::Ok(value) => ::core::result::Result::Ok(#ok),
                ::core::result::Result::Err(error) => ::core::result::Result::Err(::tomii_types::export::failure(error)),
            }
        }
    } else {
        let value = convert(call);
        quote!(::core::result::Result::Ok(#value))
    };
    let ctx = if uses_context { quote!(ctx) } else { quote!(_ctx) };
    Ok(quote! {
        const SIGNATURE: ::tomii_types::export::Signature = ::tomii_types::export::Signature {
            kernel: #kernel,
            params: &[#(#names),*],
            variadic: #variadic,
        };

        fn safe(
            #ctx: &::tomii_types::kernel::CallCtx<'_>,
            args: &::tomii_types::kernel::Args<'_>,
        ) -> ::core::result::Result<::tomii_types::kernel::Value, ::tomii_types::kernel::KernelError> {
            SIGNATURE.check_count(args)?;
            #(#conversions)*
            #body
        }
    })
}

/// The parameter's name for messages: its identifier, or its position when it is a pattern.
fn parameter_name(pattern: &syn::Pat, index: usize) -> LitStr {
    let text = match pattern {
        syn::Pat::Ident(ident) => ident.ident.unraw().to_string(),
        _ => format!("#{index}"),
    };
    LitStr::new(&text, Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(attr: &str, item: &str) -> String {
        match expand(attr.parse().unwrap(), item.parse().unwrap()) {
            Ok(tokens) => panic!("expected an error, got {tokens}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn options_and_names() {
        let tokens =
            expand("variadic, name = \"sum_all\"".parse().unwrap(), "fn sum(xs: &[u64]) -> u64 { 0 }".parse().unwrap())
                .unwrap()
                .to_string();
        assert!(tokens.contains("c\"sum_all\""), "{tokens}");
        assert!(tokens.contains("variadic : true"), "{tokens}");
        assert!(tokens.contains("list :: < u64 >"), "{tokens}");
        let raw = expand(TokenStream2::new(), "fn r#type() {}".parse().unwrap()).unwrap().to_string();
        assert!(raw.contains("c\"type\""), "{raw}");
    }

    #[test]
    fn what_cannot_be_a_kernel_is_a_compile_error() {
        assert!(error_of("verbose", "fn f() {}").contains("unknown #[tomii_export] option"));
        assert!(error_of("name = \"\"", "fn f() {}").contains("non-empty"));
        assert!(error_of("", "struct S;").contains("free function"));
        assert!(error_of("", "async fn f() {}").contains("async"));
        assert!(error_of("", "fn f<T>(x: T) {}").contains("generic"));
        assert!(error_of("variadic", "fn f() {}").contains("last parameter"));
        assert!(error_of("", "fn f(p: &mut Plan) {}").contains("&mut T"));
    }
}
