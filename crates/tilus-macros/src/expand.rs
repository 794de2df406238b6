//! The expansion of `#[script]`, on `proc_macro2` tokens so that unit tests can call it.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{
    token, Block, Error, Expr, ExprBlock, ExprLit, ExprMethodCall, ExprPath, FnArg, Ident,
    ImplItem, ImplItemFn, Item, ItemImpl, Lit, LitStr, Local, Pat, Stmt,
};

/// Expands `#[script]` on `item`. Malformed input gives the item back unchanged, preceded by a
/// `compile_error!` at the offending tokens.
pub(crate) fn script(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_script(attr, item.clone()) {
        Ok(tokens) => tokens,
        Err(e) => {
            let err = e.to_compile_error();
            quote! { #err #item }
        }
    }
}

fn try_script(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(Error::new_spanned(
            attr,
            "`#[script]` takes no arguments: write `#[script]`",
        ));
    }
    let mut imp: ItemImpl = match syn::parse2::<Item>(item)? {
        Item::Impl(imp) => imp,
        other => {
            return Err(Error::new_spanned(
                other,
                "`#[script]` goes on an `impl Script for T { ... }` block",
            ))
        }
    };
    if imp.trait_.is_none() {
        return Err(Error::new_spanned(
            &imp.self_ty,
            "`#[script]` goes on an `impl Script for T { ... }` block, not an inherent impl",
        ));
    }
    let has_arg_names = imp
        .items
        .iter()
        .any(|i| matches!(i, ImplItem::Fn(f) if f.sig.ident == "arg_names"));
    let self_ty = imp.self_ty.clone();
    let body = imp
        .items
        .iter_mut()
        .find_map(|i| match i {
            ImplItem::Fn(f) if f.sig.ident == "body" => Some(f),
            _ => None,
        })
        .ok_or_else(|| {
            Error::new_spanned(
                &self_ty,
                "`#[script]`: this impl has no `fn body(&self, k: &mut Kernel, (..): Handles<Self::Args>)`",
            )
        })?;
    let (kernel, arg_names) = signature(body)?;
    if let Some(kernel) = kernel {
        Rewriter { kernel }.visit_block_mut(&mut body.block);
    }
    if !has_arg_names {
        if let Some(f) = arg_names {
            imp.items.push(ImplItem::Fn(f));
        }
    }
    Ok(imp.into_token_stream())
}

/// The body's kernel identifier (none for `_`), and `fn arg_names` if the argument pattern
/// is a tuple.
fn signature(body: &ImplItemFn) -> syn::Result<(Option<Ident>, Option<ImplItemFn>)> {
    let mut typed = body.sig.inputs.iter().filter_map(|a| match a {
        FnArg::Typed(t) => Some(t),
        FnArg::Receiver(_) => None,
    });
    let Some(kernel) = typed.next() else {
        return Err(Error::new_spanned(
            &body.sig,
            "`#[script]`: `fn body` needs the kernel parameter: `fn body(&self, k: &mut Kernel, (..): Handles<Self::Args>)`",
        ));
    };
    let kernel = match &*kernel.pat {
        Pat::Ident(p) if p.subpat.is_none() => Some(p.ident.clone()),
        Pat::Wild(_) => None,
        other => {
            return Err(Error::new_spanned(
                other,
                "`#[script]`: the kernel parameter of `fn body` must be a plain identifier, such as `k`",
            ))
        }
    };
    let arg_names = match typed.next().map(|args| &*args.pat) {
        Some(Pat::Tuple(t)) => {
            let names = t
                .elems
                .iter()
                .take_while(|p| !matches!(p, Pat::Rest(_)))
                .enumerate()
                .map(|(i, p)| match p {
                    Pat::Ident(p) => LitStr::new(&p.ident.unraw().to_string(), p.ident.span()),
                    other => LitStr::new(&format!("arg{i}"), other.span()),
                });
            let span = t.span();
            Some(syn::parse2(quote_spanned! {span=>
                fn arg_names() -> &'static [&'static str] {
                    &[#(#names),*]
                }
            })?)
        }
        _ => None,
    };
    Ok((kernel, arg_names))
}

/// Inserts the `name_next` calls into a body whose kernel is `kernel`.
struct Rewriter {
    kernel: Ident,
}

impl Rewriter {
    /// The kernel token at the root of `expr`, if `expr` is a method call (or a chain of them)
    /// on the kernel.
    fn kernel_root(&self, expr: &Expr) -> Option<Ident> {
        let Expr::MethodCall(call) = expr else {
            return None;
        };
        let mut receiver = &*call.receiver;
        while let Expr::MethodCall(inner) = receiver {
            receiver = &inner.receiver;
        }
        self.as_kernel(receiver)
    }

    /// The kernel token, if `expr` is the plain path naming the kernel. The token is the
    /// user's own, so inserted calls resolve to the binding in scope where they are inserted.
    fn as_kernel(&self, expr: &Expr) -> Option<Ident> {
        match expr {
            Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
                p.path.get_ident().filter(|i| **i == self.kernel).cloned()
            }
            _ => None,
        }
    }

    /// `let NAME = k....;` → `let NAME = { k.name_next("NAME"); k....; }`.
    fn rewrite_local(&self, local: &mut Local) {
        let Some(name) = binding_name(&local.pat) else {
            return;
        };
        let Some(init) = &mut local.init else {
            return;
        };
        if init.diverge.is_some() {
            return;
        }
        let Some(kernel) = self.kernel_root(&init.expr) else {
            return;
        };
        let span = init.expr.span();
        let expr = std::mem::replace(&mut *init.expr, Expr::Verbatim(TokenStream::new()));
        *init.expr = Expr::Block(ExprBlock {
            attrs: vec![],
            label: None,
            block: Block {
                brace_token: token::Brace(span),
                stmts: vec![name_next(kernel, &name, span), Stmt::Expr(expr, None)],
            },
        });
    }

    /// For `k.for_range(.., |k, IDENT| ..)`, the statement `k.name_next("IDENT");`.
    fn loop_name(&self, expr: &Expr) -> Option<Stmt> {
        let Expr::MethodCall(call) = expr else {
            return None;
        };
        if call.method != "for_range" {
            return None;
        }
        let kernel = self.as_kernel(&call.receiver)?;
        let Some(Expr::Closure(closure)) = call.args.last() else {
            return None;
        };
        if closure.inputs.len() != 2 {
            return None;
        }
        let name = binding_name(&closure.inputs[1])?;
        Some(name_next(kernel, &name, expr.span()))
    }
}

/// The statement `kernel.name_next("name");`, at `span`. Built as syntax, not parsed, so it
/// cannot fail; `kernel` is the user's own token.
fn name_next(kernel: Ident, name: &str, span: Span) -> Stmt {
    let call = Expr::MethodCall(ExprMethodCall {
        attrs: vec![],
        receiver: Box::new(Expr::Path(ExprPath {
            attrs: vec![],
            qself: None,
            path: kernel.into(),
        })),
        dot_token: token::Dot(span),
        method: Ident::new("name_next", span),
        turbofish: None,
        paren_token: token::Paren(span),
        args: std::iter::once(Expr::Lit(ExprLit {
            attrs: vec![],
            lit: Lit::Str(LitStr::new(name, span)),
        }))
        .collect(),
    });
    Stmt::Expr(call, Some(token::Semi(span)))
}

/// The name bound by a plain identifier pattern (`x`, `mut x`, `x: T`), without `r#`.
fn binding_name(pat: &Pat) -> Option<String> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            Some(p.ident.unraw().to_string())
        }
        Pat::Type(t) => binding_name(&t.pat),
        _ => None,
    }
}

impl VisitMut for Rewriter {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let stmts = std::mem::take(&mut block.stmts);
        for mut stmt in stmts {
            self.visit_stmt_mut(&mut stmt);
            match &mut stmt {
                Stmt::Local(local) => self.rewrite_local(local),
                Stmt::Expr(expr, _) => block.stmts.extend(self.loop_name(expr)),
                Stmt::Item(_) | Stmt::Macro(_) => {}
            }
            block.stmts.push(stmt);
        }
    }

    /// Items nested in the body (helper functions, ...) have their own scope: left alone.
    fn visit_item_mut(&mut self, _: &mut Item) {}
}

#[cfg(test)]
mod tests {
    use super::script;
    use quote::quote;

    fn expand(item: proc_macro2::TokenStream) -> String {
        script(quote!(), item).to_string()
    }

    fn norm(tokens: proc_macro2::TokenStream) -> String {
        tokens.to_string()
    }

    #[test]
    fn names_lets_loops_and_arguments() {
        let out = expand(quote! {
            impl Script for S {
                type Args = (i32, Ptr<f16>, PtrMut<f16>);
                fn body(&self, kk: &mut Kernel, (n, _, c_ptr): Handles<Self::Args>) {
                    let offset = kk.let_i32(self.block * kk.block_idx().x);
                    let mut phase: Val = kk.var_u32(0u32);
                    let bar = kk.mbarrier().alloc([1]);
                    let c = kk.cast::<f16>(&acc);
                    kk.for_range(0, n, 1, |kk, step| {
                        let t = kk.load_shared(&sa);
                        kk.single_thread(|kk| { let u = kk.load_shared(&sa); });
                    });
                }
            }
        });
        for want in [
            norm(
                quote!(let offset = { kk.name_next("offset"); kk.let_i32(self.block * kk.block_idx().x) };),
            ),
            norm(quote!(let mut phase: Val = { kk.name_next("phase"); kk.var_u32(0u32) };)),
            norm(quote!(let bar = { kk.name_next("bar"); kk.mbarrier().alloc([1]) };)),
            norm(quote!(let c = { kk.name_next("c"); kk.cast::<f16>(&acc) };)),
            norm(quote!(kk.name_next("step");)) + " kk . for_range (0 , n , 1 , | kk , step |",
            norm(quote!(let t = { kk.name_next("t"); kk.load_shared(&sa) };)),
            norm(quote!(let u = { kk.name_next("u"); kk.load_shared(&sa) };)),
            norm(quote!(
                fn arg_names() -> &'static [&'static str] {
                    &["n", "arg1", "c_ptr"]
                }
            )),
        ] {
            assert!(out.contains(&want), "missing `{want}` in\n{out}");
        }
    }

    #[test]
    fn leaves_everything_else_alone() {
        let body = quote! {
            let (a, b) = (k.load_shared(&sa), k.load_shared(&sb));
            let _ = k.load_shared(&sa);
            let x = helper(k);
            let y = other.load_shared(&sa);
            let z = self.k.load_shared(&sa);
            let w = k.block_idx().x;
            let n;
            k.for_range(0, 4, 1, |k, _| {});
            k.for_range(0, 4, 1, body);
            k.for_range2(0, 4, 1, |k, i| {});
            k.tma().for_range(0, 4, 1, |k, i| {});
            k.for_range(0, 4, 1, |k| {});
            let e = k.load_shared(&sa) else { return };
            fn helper(k: &mut Kernel) -> Val { let v = k.let_i32(1); v }
        };
        let out = expand(quote! {
            impl Script for S {
                type Args = (i32,);
                fn arg_names() -> &'static [&'static str] { &["mine"] }
                fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) { #body }
            }
        });
        assert!(out.contains(&body.to_string()), "{out}");
        assert!(!out.contains("name_next"), "{out}");
        assert_eq!(out.matches("fn arg_names").count(), 1, "{out}");
    }

    #[test]
    fn no_arg_names_without_a_tuple_and_none_past_a_rest_pattern() {
        let out = expand(quote! {
            impl Script for S {
                fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {}
            }
        });
        assert!(!out.contains("arg_names"), "{out}");
        let out = expand(quote! {
            impl Script for S {
                fn body(&self, k: &mut Kernel, (a, Ptr(b), .., z): Handles<Self::Args>) {}
            }
        });
        assert!(out.contains(r#"& ["a" , "arg1"]"#), "{out}");
    }

    #[test]
    fn an_unnamed_kernel_still_gets_arg_names() {
        let out = expand(quote! {
            impl Script for S {
                fn body(&self, _: &mut Kernel, (n,): Handles<Self::Args>) { let m = n; }
            }
        });
        assert!(out.contains(r#"& ["n"]"#), "{out}");
        assert!(!out.contains("name_next"), "{out}");
    }

    #[test]
    fn malformed_input_is_a_compile_error() {
        let cases = [
            (
                quote!(),
                quote!(
                    struct S;
                ),
            ),
            (
                quote!(),
                quote!(impl S { fn body(&self, k: &mut Kernel) {} }),
            ),
            (quote!(), quote!(impl Script for S { type Args = (); })),
            (quote!(), quote!(impl Script for S { fn body(&self) {} })),
            (
                quote!(),
                quote!(impl Script for S { fn body(&self, (k, j): (u8, u8), a: ()) {} }),
            ),
            (
                quote!(),
                quote!(impl Script for S { fn body(&self, k @ _: (u8, u8), a: ()) {} }),
            ),
            (quote!(name = "x"), quote!(impl Script for S {})),
            (
                quote!(),
                quote!(
                    fn not_an_impl() {}
                ),
            ),
        ];
        for (attr, item) in cases {
            let out = script(attr, item.clone()).to_string();
            assert!(out.contains("compile_error"), "{item}: {out}");
            // the item is given back, so that the only error is ours
            assert!(out.contains(&item.to_string()), "{item}: {out}");
        }
    }
}
