//! The expansion of `#[derive(Tunable)]`, on `proc_macro2` tokens so that unit tests can call it.

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Data, DeriveInput, Error, Expr, ExprArray, ExprLit, ExprUnary, Field, Fields, Ident,
    Lit, LitStr, Token, Type, UnOp,
};

/// Expands `#[derive(Tunable)]` on `input`. Malformed input gives `compile_error!`s at the
/// offending tokens (every problem found, not just the first), and no impl.
pub(crate) fn tunable(input: TokenStream) -> TokenStream {
    match try_tunable(input) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

/// One `#[tune(a, b = [(1, 2), ...])]` attribute: the names it binds and one tuple per choice.
struct TuneAttr {
    names: Vec<Ident>,
    values: ExprArray,
}

impl Parse for TuneAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let names: Punctuated<Ident, Token![,]> = Punctuated::parse_separated_nonempty(input)?;
        if !input.peek(Token![=]) {
            return Err(input.error(
                "expected `= [values]` after the names, as in `#[tune(block_k = [16, 32, 64])]`",
            ));
        }
        input.parse::<Token![=]>()?;
        let values: ExprArray = input.parse()?;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        if !input.is_empty() {
            return Err(input.error(
                "one list per `#[tune(...)]`: write another `#[tune(...)]` attribute for the next names",
            ));
        }
        Ok(TuneAttr {
            names: names.into_iter().collect(),
            values,
        })
    }
}

/// A value in a `#[tune]` list, read at compile time.
#[derive(Clone, Copy)]
enum Value {
    /// An integer literal, possibly negated.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
}

impl Value {
    fn as_i64(self) -> i64 {
        match self {
            Value::Int(v) => v,
            Value::Bool(b) => i64::from(b),
        }
    }
}

/// Collects errors so that one expansion reports them all.
#[derive(Default)]
struct Errors(Option<Error>);

impl Errors {
    fn push(&mut self, e: Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn try_tunable(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let ident = &input.ident;
    let fields: Vec<&Field> =
        match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named.named.iter().collect(),
                Fields::Unit => vec![],
                Fields::Unnamed(unnamed) => return Err(Error::new_spanned(
                    unnamed,
                    "`#[derive(Tunable)]` needs named fields (`struct S { block_m: i32, .. }`): \
                     `#[tune]` binds hyperparameters by field name",
                )),
            },
            Data::Enum(e) => {
                return Err(Error::new_spanned(
                    e.enum_token,
                    "`#[derive(Tunable)]` goes on a struct with named fields, not an enum",
                ))
            }
            Data::Union(u) => {
                return Err(Error::new_spanned(
                    u.union_token,
                    "`#[derive(Tunable)]` goes on a struct with named fields, not a union",
                ))
            }
        };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        return Err(Error::new_spanned(
            &input.generics,
            "`#[derive(Tunable)]` does not support generic structs: a search space is one set of \
             concrete values, so write it on a concrete struct",
        ));
    }

    let mut errors = Errors::default();
    // field name (without `r#`) → its field
    let by_name: BTreeMap<String, &Field> = fields
        .iter()
        .filter_map(|f| f.ident.as_ref().map(|i| (i.unraw().to_string(), *f)))
        .collect();
    for f in &fields {
        for attr in f.attrs.iter().filter(|a| a.path().is_ident("tune")) {
            errors.push(Error::new_spanned(
                attr,
                "`#[tune(...)]` goes on the struct, not on a field: \
                 `#[tune(name = [values])]` above `struct`",
            ));
        }
    }

    // name → the ident that bound it first
    let mut bound: BTreeMap<String, Ident> = BTreeMap::new();
    let mut axes = vec![];
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("tune")) {
        match axis(ident, attr, &by_name, &mut bound) {
            Ok(a) => axes.push(a),
            Err(e) => errors.push(e),
        }
    }
    for f in &fields {
        let Some(fi) = &f.ident else { continue };
        let name = fi.unraw().to_string();
        if !bound.contains_key(&name) {
            errors.push(Error::new_spanned(
                fi,
                format!(
                    "field `{name}` of `{ident}` is not tuned: add it to a `#[tune(...)]` \
                     attribute on the struct, e.g. `#[tune({name} = [..])]`"
                ),
            ));
        }
    }
    errors.finish()?;

    // locals of the generated code are hygienic: they cannot clash with the user's names
    let span = Span::mixed_site();
    let space = Ident::new("space", span);
    let binding = Ident::new("binding", span);
    let space_steps = axes.iter().map(|(names, tuples)| {
        let tuples = tuples.iter().map(|t| quote!(::std::vec![#(#t),*]));
        quote_spanned! {span=>
            let #space = match #space.axis(&[#(#names),*], ::std::vec![#(#tuples),*]) {
                ::std::result::Result::Ok(#space) => #space,
                // checked when the derive expanded
                ::std::result::Result::Err(e) => ::std::panic!(
                    "#[derive(Tunable)] on {}: {}", ::std::stringify!(#ident), e
                ),
            };
        }
    });
    let inits = fields.iter().filter_map(|f| {
        let fi = f.ident.as_ref()?;
        Some(field_init(ident, fi, &f.ty))
    });
    let reads = fields.iter().filter_map(|f| {
        let fi = f.ident.as_ref()?;
        let name = fi.unraw().to_string();
        Some(quote_spanned! {span=> (::std::string::String::from(#name), self.#fi as i64) })
    });
    let body = match &input.data {
        Data::Struct(s) if matches!(s.fields, Fields::Unit) => quote!(#ident),
        _ => quote!(#ident { #(#inits)* }),
    };
    Ok(quote_spanned! {span=>
        impl ::tilus::tune::Tunable for #ident {
            fn space() -> ::tilus::tune::Space {
                let #space = ::tilus::tune::Space::new();
                #(#space_steps)*
                #space
            }

            fn from_binding(
                #binding: &::tilus::tune::Binding,
            ) -> ::std::result::Result<Self, ::std::string::String> {
                let _ = #binding;
                ::std::result::Result::Ok(#body)
            }

            fn to_binding(&self) -> ::std::option::Option<::tilus::tune::Binding> {
                ::std::option::Option::Some(::tilus::tune::Binding(::std::vec![#(#reads),*]))
            }
        }
    })
}

/// One axis of the space from one attribute: its names as string literals and its tuples as
/// `i64` literals. Records the names in `bound`.
fn axis(
    ident: &Ident,
    attr: &Attribute,
    by_name: &BTreeMap<String, &Field>,
    bound: &mut BTreeMap<String, Ident>,
) -> syn::Result<(Vec<LitStr>, Vec<Vec<TokenStream>>)> {
    let TuneAttr { names, values } = attr.parse_args::<TuneAttr>()?;
    let mut errors = Errors::default();
    let mut fields = vec![];
    for n in &names {
        let name = n.unraw().to_string();
        match bound.get(&name) {
            Some(first) => {
                let mut e = Error::new_spanned(
                    n,
                    format!("`{name}` is bound twice: each name goes in one `#[tune(...)]`"),
                );
                e.combine(Error::new_spanned(
                    first,
                    format!("`{name}` first bound here"),
                ));
                errors.push(e);
            }
            None => {
                bound.insert(name.clone(), n.clone());
            }
        }
        match by_name.get(&name) {
            Some(f) => fields.push(Some(*f)),
            None => {
                fields.push(None);
                errors.push(Error::new_spanned(
                    n,
                    format!("`{name}` is not a field of `{ident}`"),
                ));
            }
        }
    }
    if values.elems.is_empty() {
        errors.push(Error::new_spanned(
            &values,
            "the list of values is empty: a tuned hyperparameter needs at least one value",
        ));
    }
    let mut tuples = vec![];
    for elem in &values.elems {
        let items: Vec<&Expr> = if names.len() == 1 {
            if let Expr::Tuple(t) = elem {
                errors.push(Error::new_spanned(
                    t,
                    format!(
                        "`{}` is a single name: its values are scalars, as in `[16, 32, 64]`",
                        names[0].unraw()
                    ),
                ));
                continue;
            }
            vec![elem]
        } else {
            let want = names
                .iter()
                .map(|n| n.unraw().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            match elem {
                Expr::Tuple(t) if t.elems.len() == names.len() => t.elems.iter().collect(),
                Expr::Tuple(t) => {
                    errors.push(Error::new_spanned(
                        t,
                        format!(
                            "expected a tuple of {} values for ({want}), found {}",
                            names.len(),
                            t.elems.len()
                        ),
                    ));
                    continue;
                }
                other => {
                    errors.push(Error::new_spanned(
                        other,
                        format!("expected a tuple of {} values for ({want})", names.len()),
                    ));
                    continue;
                }
            }
        };
        let mut tuple = vec![];
        for (item, field) in items.into_iter().zip(&fields) {
            match value(item).and_then(|v| check_fits(item, v, *field)) {
                Ok(v) => {
                    let v = v.as_i64();
                    tuple.push(quote!(#v));
                }
                Err(e) => errors.push(e),
            }
        }
        tuples.push(tuple);
    }
    errors.finish()?;
    let names = names
        .iter()
        .map(|n| LitStr::new(&n.unraw().to_string(), n.span()))
        .collect();
    Ok((names, tuples))
}

/// The value of an integer literal, a negated one, `true` or `false`.
fn value(expr: &Expr) -> syn::Result<Value> {
    const EXPECTED: &str =
        "expected an integer literal (`64`, `-1`), or `true`/`false` for a `bool` field";
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<i64>().map(Value::Int).map_err(|_| {
            Error::new_spanned(i, format!("{} does not fit in i64", i.base10_digits()))
        }),
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(Value::Bool(b.value)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => match &**inner {
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }) => i
                .base10_parse::<i128>()
                .ok()
                .and_then(|v| i64::try_from(-v).ok())
                .map(Value::Int)
                .ok_or_else(|| {
                    Error::new_spanned(expr, format!("-{} does not fit in i64", i.base10_digits()))
                }),
            _ => Err(Error::new_spanned(expr, EXPECTED)),
        },
        _ => Err(Error::new_spanned(expr, EXPECTED)),
    }
}

/// Checks `v` against the field's type where the type is a primitive the macro knows: `bool`
/// takes `true`/`false` only, and fixed-width integers take the values in their range.
fn check_fits(expr: &Expr, v: Value, field: Option<&Field>) -> syn::Result<Value> {
    let Some(field) = field else { return Ok(v) };
    let ty = primitive(&field.ty);
    let name = field
        .ident
        .as_ref()
        .map(|i| i.unraw().to_string())
        .unwrap_or_default();
    let range: Option<(i128, i128)> = match ty.as_deref() {
        Some("i8") => Some((i8::MIN.into(), i8::MAX.into())),
        Some("i16") => Some((i16::MIN.into(), i16::MAX.into())),
        Some("i32") => Some((i32::MIN.into(), i32::MAX.into())),
        Some("i64") => Some((i64::MIN.into(), i64::MAX.into())),
        Some("u8") => Some((0, u8::MAX.into())),
        Some("u16") => Some((0, u16::MAX.into())),
        Some("u32") => Some((0, u32::MAX.into())),
        Some("u64") => Some((0, u64::MAX.into())),
        _ => None,
    };
    match (v, ty.as_deref()) {
        (Value::Bool(_), Some("bool")) => Ok(v),
        (Value::Int(_), Some("bool")) => Err(Error::new_spanned(
            expr,
            format!("`{name}` is a `bool`: write `true` or `false`"),
        )),
        (Value::Bool(_), _) => Err(Error::new_spanned(
            expr,
            format!("`true`/`false` are for `bool` fields, and `{name}` is not one"),
        )),
        (Value::Int(i), Some(t)) => match range {
            Some((lo, hi)) if !(lo..=hi).contains(&i128::from(i)) => Err(Error::new_spanned(
                expr,
                format!("{i} does not fit in `{name}: {t}`"),
            )),
            _ => Ok(v),
        },
        (Value::Int(_), None) => Ok(v),
    }
}

/// The name of a one-segment type path (`i32`, `bool`), if the type is one.
fn primitive(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Type::Group(g) => primitive(&g.elem),
        Type::Paren(p) => primitive(&p.elem),
        _ => None,
    }
}

/// `field: <value of "field" in the binding, converted>,` for the struct literal of
/// `from_binding`.
fn field_init(ident: &Ident, field: &Ident, ty: &Type) -> TokenStream {
    let span = Span::mixed_site();
    let binding = Ident::new("binding", span);
    let v = Ident::new("v", span);
    let name = field.unraw().to_string();
    let missing = LitStr::new(
        &format!("{ident}: the binding `{{}}` has no value for `{name}`"),
        field.span(),
    );
    // the type as written, for the message (braces escaped for `format!`)
    let ty_name = ty
        .to_token_stream()
        .to_string()
        .replace(' ', "")
        .replace('{', "{{")
        .replace('}', "}}");
    let convert = if primitive(ty).as_deref() == Some("bool") {
        let bad = LitStr::new(
            &format!("{ident}: {name}={{}} is not a bool (expected 0 or 1)"),
            field.span(),
        );
        quote_spanned! {span=>
            match #v {
                0 => false,
                1 => true,
                other => return ::std::result::Result::Err(::std::format!(#bad, other)),
            }
        }
    } else {
        let bad = LitStr::new(
            &format!("{ident}: {name}={{}} does not fit in {ty_name}"),
            field.span(),
        );
        quote_spanned! {span=>
            match <#ty as ::std::convert::TryFrom<i64>>::try_from(#v) {
                ::std::result::Result::Ok(x) => x,
                ::std::result::Result::Err(_) => {
                    return ::std::result::Result::Err(::std::format!(#bad, #v))
                }
            }
        }
    };
    quote_spanned! {span=>
        #field: {
            let #v: i64 = match #binding.get(#name) {
                ::std::option::Option::Some(#v) => #v,
                ::std::option::Option::None => {
                    return ::std::result::Result::Err(::std::format!(#missing, #binding))
                }
            };
            #convert
        },
    }
}

#[cfg(test)]
mod tests {
    use super::tunable;
    use quote::quote;

    fn expand(input: proc_macro2::TokenStream) -> String {
        tunable(input).to_string()
    }

    /// The expansion is an error containing `want`.
    fn fails(input: proc_macro2::TokenStream, want: &str) {
        let out = expand(input.clone());
        assert!(out.contains("compile_error"), "{input}: {out}");
        assert!(
            !out.contains("Tunable for"),
            "an error gives no impl: {out}"
        );
        assert!(out.contains(want), "`{want}` missing in {out}");
    }

    #[test]
    fn the_seed_space() {
        let out = expand(quote! {
            #[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
            #[tune(block_m, block_n = [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)])]
            #[tune(block_k = [16, 32, 64])]
            pub struct MatmulTma { pub block_m: i32, pub block_n: i32, pub block_k: i32 }
        });
        assert!(!out.contains("compile_error"), "{out}");
        for want in [
            "impl :: tilus :: tune :: Tunable for MatmulTma",
            r#"space . axis (& ["block_m" , "block_n"] , :: std :: vec ! [:: std :: vec ! [64i64 , 128i64] , :: std :: vec ! [128i64 , 128i64]"#,
            r#"space . axis (& ["block_k"] , :: std :: vec ! [:: std :: vec ! [16i64] , :: std :: vec ! [32i64] , :: std :: vec ! [64i64]])"#,
            r#"binding . get ("block_m")"#,
            "< i32 as :: std :: convert :: TryFrom < i64 >> :: try_from (v)",
            "MatmulTma: block_k={} does not fit in i32",
            "MatmulTma: the binding `{}` has no value for `block_n`",
        ] {
            assert!(out.contains(want), "missing `{want}` in\n{out}");
        }
        let first_mn = out.find(r#"["block_m" , "block_n"]"#).unwrap();
        let first_k = out.find(r#"["block_k"]"#).unwrap();
        assert!(first_mn < first_k, "axes keep the attributes' order: {out}");
    }

    #[test]
    fn negatives_bools_raw_names_and_unit_structs() {
        let out = expand(quote! {
            #[tune(r#type, flag = [(-3, true), (-9223372036854775808, false)])]
            #[tune(small = [255])]
            struct S { r#type: i64, flag: bool, small: u8 }
        });
        assert!(!out.contains("compile_error"), "{out}");
        for want in [
            r#"["type" , "flag"]"#,
            "[- 3i64 , 1i64]",
            "[- 9223372036854775808i64 , 0i64]",
            "r#type :",
            "0 => false , 1 => true",
        ] {
            assert!(out.contains(want), "missing `{want}` in\n{out}");
        }
        let out = expand(quote!(
            struct Unit;
        ));
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("Ok (Unit)"), "{out}");
    }

    #[test]
    fn a_name_bound_twice() {
        fails(
            quote! {
                #[tune(a = [1])]
                #[tune(b, a = [(1, 2)])]
                struct S { a: i32, b: i32 }
            },
            "`a` is bound twice",
        );
        fails(
            quote! {
                #[tune(a, a = [(1, 2)])]
                struct S { a: i32 }
            },
            "`a` is bound twice",
        );
    }

    #[test]
    fn a_name_that_is_not_a_field() {
        fails(
            quote! {
                #[tune(a = [1])]
                #[tune(block_q = [1])]
                struct S { a: i32 }
            },
            "`block_q` is not a field of `S`",
        );
    }

    #[test]
    fn an_empty_list() {
        fails(
            quote! {
                #[tune(a = [])]
                struct S { a: i32 }
            },
            "the list of values is empty",
        );
    }

    #[test]
    fn tuples_of_the_wrong_shape() {
        fails(
            quote! {
                #[tune(a, b = [(1, 2), (1, 2, 3)])]
                struct S { a: i32, b: i32 }
            },
            "expected a tuple of 2 values for (a, b), found 3",
        );
        fails(
            quote! {
                #[tune(a, b = [(1, 2), 3])]
                struct S { a: i32, b: i32 }
            },
            "expected a tuple of 2 values for (a, b)",
        );
        fails(
            quote! {
                #[tune(a = [(1, 2)])]
                struct S { a: i32 }
            },
            "`a` is a single name: its values are scalars",
        );
    }

    #[test]
    fn a_field_not_covered() {
        fails(
            quote! {
                #[tune(a = [1])]
                struct S { a: i32, block_k: i32 }
            },
            "field `block_k` of `S` is not tuned: add it to a `#[tune(...)]` attribute",
        );
        fails(
            quote! {
                struct S { a: i32 }
            },
            "field `a` of `S` is not tuned",
        );
    }

    #[test]
    fn enums_tuple_structs_unions_and_generics() {
        fails(
            quote! {
                #[tune(a = [1])]
                enum E { A }
            },
            "not an enum",
        );
        fails(
            quote! {
                struct T(i32);
            },
            "needs named fields",
        );
        fails(
            quote! {
                union U { a: i32 }
            },
            "not a union",
        );
        fails(
            quote! {
                #[tune(a = [1])]
                struct G<T> { a: i32, t: T }
            },
            "does not support generic structs",
        );
        fails(
            quote! {
                #[tune(a = [1])]
                struct G<'a> { a: &'a i32 }
            },
            "does not support generic structs",
        );
    }

    #[test]
    fn values_that_are_not_integer_literals() {
        for bad in [
            quote!(1.5),
            quote!("64"),
            quote!(x),
            quote!(-x),
            quote!(!1),
            quote!(1 + 1),
            quote!('c'),
        ] {
            fails(
                quote! {
                    #[tune(a = [1, #bad])]
                    struct S { a: i32 }
                },
                "expected an integer literal",
            );
        }
        fails(
            quote! {
                #[tune(a = [9223372036854775808])]
                struct S { a: i64 }
            },
            "does not fit in i64",
        );
        fails(
            quote! {
                #[tune(a = [-9223372036854775809])]
                struct S { a: i64 }
            },
            "does not fit in i64",
        );
    }

    #[test]
    fn values_checked_against_primitive_field_types() {
        fails(
            quote! {
                #[tune(a = [256])]
                struct S { a: u8 }
            },
            "256 does not fit in `a: u8`",
        );
        fails(
            quote! {
                #[tune(a = [-1])]
                struct S { a: u32 }
            },
            "-1 does not fit in `a: u32`",
        );
        fails(
            quote! {
                #[tune(a = [true])]
                struct S { a: i32 }
            },
            "`true`/`false` are for `bool` fields",
        );
        fails(
            quote! {
                #[tune(a = [1])]
                struct S { a: bool }
            },
            "`a` is a `bool`: write `true` or `false`",
        );
    }

    #[test]
    fn malformed_attributes() {
        for (attr, want) in [
            (
                quote!(#[tune]),
                "expected attribute arguments in parentheses",
            ),
            (quote!(#[tune(a)]), "expected `= [values]`"),
            (quote!(#[tune(a = 1)]), "expected square brackets"),
            (
                quote!(#[tune(a = [1], b = [2])]),
                "one list per `#[tune(...)]`",
            ),
            (quote!(#[tune(= [1])]), "expected identifier"),
        ] {
            fails(
                quote! {
                    #attr
                    struct S { a: i32 }
                },
                want,
            );
        }
        fails(
            quote! {
                #[tune(a = [1])]
                struct S { #[tune(b = [1])] a: i32 }
            },
            "goes on the struct, not on a field",
        );
    }

    #[test]
    fn every_problem_is_reported() {
        let out = expand(quote! {
            #[tune(a = [])]
            #[tune(q = [1])]
            struct S { a: i32, b: i32 }
        });
        for want in [
            "is empty",
            "`q` is not a field",
            "field `b` of `S` is not tuned",
        ] {
            assert!(out.contains(want), "missing `{want}` in\n{out}");
        }
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
    }
}
