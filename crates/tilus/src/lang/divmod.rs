//! `fast_divmod`: division by a value fixed for the whole launch as a multiply and a shift.
//! The host derives the multiplier and the shift from the arguments at each launch
//! ([`crate::ir::fast_divisor_bits`]) and passes them as one more kernel parameter; the
//! kernel's division is then two integer multiply-adds and a shift instead of the tens of
//! instructions of a general division. Tile schedulers divide a tile index by the number of
//! tiles in a row on every tile; this is what they use.

use super::{Kernel, Scalar, Val};
use crate::ir::{BinOp, DType, Expr, Loc, VarId, VarKind};

/// A divisor prepared for fast division (see [`Kernel::fast_divisor`]).
#[derive(Clone, Debug)]
pub struct FastDivisor {
    divisor: Scalar,
    /// The kernel parameter holding the packed multiplier and shift; `None` for a
    /// compile-time constant (the compiler divides by a constant with a multiply already).
    packed: Option<Val>,
}

impl Kernel {
    /// Prepares `divisor` (an `i32` the host can compute before the launch: an expression
    /// over runtime arguments, constants and `let`s of them, such as `cdiv(n, 128)`) for
    /// [`FastDivisor::div`] and [`FastDivisor::divmod`]. A launch checks that it lies in
    /// `1 ..= 2³¹ − 1` (nothing is launched otherwise).
    #[track_caller]
    pub fn fast_divisor(&mut self, divisor: impl Into<Scalar>) -> FastDivisor {
        self.prepare_divisor(divisor.into(), Some(Loc::caller()))
    }

    /// A fast divisor when the host can compute `divisor`, a plain one (dividing with `/`)
    /// otherwise: for library helpers that take any divisor.
    pub(crate) fn divisor_if_host(&mut self, divisor: impl Into<Scalar>) -> FastDivisor {
        self.prepare_divisor(divisor.into(), None)
    }

    /// `required`: where the script asked for a fast divisor (an error if the host cannot
    /// compute it).
    fn prepare_divisor(&mut self, divisor: Scalar, required: Option<Loc>) -> FastDivisor {
        let plain = |divisor| FastDivisor {
            divisor,
            packed: None,
        };
        if let Some(d) = divisor.as_const() {
            if let (true, Some(loc)) = (d < 1, required) {
                self.error(
                    loc,
                    format!("fast_divisor of the constant {d}: divisors must be at least 1"),
                );
            }
            return plain(divisor);
        }
        let host = match (self.host_expr(divisor.expr()), required) {
            (Ok(e), _) => e,
            (Err(_), None) => return plain(divisor),
            (Err(what), Some(loc)) => {
                let what = self.kernel_value_name(what);
                self.error(
                    loc,
                    format!(
                        "fast_divisor needs a divisor the host can compute before the launch \
                         (from runtime arguments, constants and `let`s of them), but it reads \
                         {what}, which the kernel computes"
                    ),
                );
                return plain(divisor);
            }
        };
        // one parameter per distinct divisor (a helper called by several roles asks again)
        let same =
            |v: &crate::ir::VarDecl| matches!(&v.kind, VarKind::FastDivisor(e) if **e == host);
        if let Some(i) = self.prog.vars.iter().position(same) {
            return FastDivisor {
                divisor,
                packed: Some(Val::var(VarId(i as u32), DType::U64)),
            };
        }
        let name = self.fresh_name("divisor");
        let id = self.new_var(name, DType::U64, VarKind::FastDivisor(Box::new(host)));
        FastDivisor {
            divisor,
            packed: Some(Val::var(id, DType::U64)),
        }
    }

    /// How messages name what [`Kernel::host_expr`] found the host cannot compute: a variable
    /// (in backquotes), or the block index.
    pub(crate) fn kernel_value_name(&self, what: Option<VarId>) -> String {
        match what {
            Some(var) => format!("`{}`", self.prog.var(var).name),
            None => "the block index".to_string(),
        }
    }

    /// `e` with every immutable `let` replaced by its definition, when what is left reads
    /// only runtime arguments; otherwise what it reads that the host does not know (a
    /// variable, or `None` for the block index).
    pub(crate) fn host_expr(&self, e: &Expr) -> Result<Expr, Option<VarId>> {
        Ok(match e {
            Expr::Int(..) | Expr::Float(..) => e.clone(),
            Expr::Var(id, _) => {
                let decl = self.prog.var(*id);
                match (&decl.kind, self.let_values.get(id)) {
                    (VarKind::Param(_), _) if decl.pointee.is_none() => e.clone(),
                    (VarKind::Let, Some(def)) => self.host_expr(def).map_err(|_| Some(*id))?,
                    _ => return Err(Some(*id)),
                }
            }
            Expr::BlockIdx(_) => return Err(None),
            Expr::Binary(op, a, b) => Expr::binary(*op, self.host_expr(a)?, self.host_expr(b)?),
            Expr::Cast(t, x) => Expr::Cast(*t, Box::new(self.host_expr(x)?)),
        })
    }
}

impl FastDivisor {
    /// The divisor as the script gave it.
    pub fn divisor(&self) -> &Scalar {
        &self.divisor
    }

    /// `n / divisor` (an `i32`), for `0 <= n < 2³¹`: `(mulhi(n, m) + n) >> s` with the
    /// host's multiplier `m` and shift `s`; a plain division when the divisor is a constant.
    pub fn div(&self, n: impl Into<Scalar>) -> Scalar {
        let n = n.into();
        let Some(packed) = self.packed else {
            return n / self.divisor.clone();
        };
        let u32_ = |e: Expr| Expr::Cast(DType::U32, Box::new(e));
        let u64_ = |e: Expr| Expr::Cast(DType::U64, Box::new(e));
        let packed = Scalar::from(packed).0;
        let n = u32_(n.0);
        let magic = u64_(u32_(packed.clone()));
        let shift = u32_(Expr::binary(BinOp::Shr, packed, Expr::Int(32, DType::U64)));
        let product = Expr::binary(BinOp::Mul, u64_(n.clone()), magic);
        let hi = u32_(Expr::binary(BinOp::Shr, product, Expr::Int(32, DType::U64)));
        let q = Expr::binary(BinOp::Shr, Expr::binary(BinOp::Add, hi, n), shift);
        Scalar(Expr::Cast(DType::I32, Box::new(q)))
    }

    /// `(n / divisor, n % divisor)` for `0 <= n < 2³¹`, computed once each (the remainder as
    /// `n − q · divisor`).
    #[track_caller]
    pub fn divmod(&self, k: &mut Kernel, n: impl Into<Scalar>) -> (Val, Val) {
        let n = n.into();
        let q = k.name_next("quotient").let_i32(self.div(n.clone()));
        let r = k
            .name_next("remainder")
            .let_i32(n - q * self.divisor.clone());
        (q, r)
    }
}
