//! Register layouts: how the elements of a register tensor are spread over the threads of a
//! thread group, as a small algebra of *spatial* and *local* modes.
//!
//! Every dimension of the tensor is split into modes (outer to inner). Some modes index
//! threads (spatial), the rest index the elements a thread keeps (local). Two layouts compose
//! with a Kronecker-like product: every element of the outer layout becomes a whole copy of the
//! inner one. The mma.sync fragments, ldmatrix results and the WGMMA accumulator are all short
//! products of the four primitives [`RegisterLayout::spatial`], [`RegisterLayout::local`],
//! their column-major variants, and [`RegisterLayout::replicate`].

use std::fmt;

/// One mode: a factor of one tensor dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mode {
    /// The tensor dimension it belongs to.
    pub dim: usize,
    /// Its extent.
    pub size: i64,
}

/// A factor of the thread index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ThreadAxis {
    /// The thread index factor selects a position along this mode.
    Mode(usize),
    /// This many threads hold the same elements (replication).
    Replicate(i64),
}

/// `(index / div) % modulus * stride`: one term of a coordinate as a function of a thread or
/// local index. A coordinate is a sum of such terms, which codegen turns into C expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    /// Divisor applied to the index.
    pub div: i64,
    /// Modulus applied after the division.
    pub modulus: i64,
    /// Stride of the mode within its dimension.
    pub stride: i64,
}

impl Term {
    /// Evaluates the term at an index.
    pub fn eval(&self, index: i64) -> i64 {
        (index / self.div) % self.modulus * self.stride
    }
}

/// A register layout. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterLayout {
    shape: Vec<i64>,
    modes: Vec<Mode>,
    spatial: Vec<ThreadAxis>,
    local: Vec<usize>,
}

impl RegisterLayout {
    fn primitive(shape: &[i64], spatial: bool, column: bool) -> RegisterLayout {
        let modes: Vec<Mode> = shape
            .iter()
            .enumerate()
            .map(|(dim, &size)| Mode { dim, size })
            .collect();
        let mut order: Vec<usize> = (0..shape.len()).collect();
        if column {
            order.reverse();
        }
        let mut l = RegisterLayout {
            shape: shape.to_vec(),
            modes,
            spatial: vec![],
            local: vec![],
        };
        if spatial {
            l.spatial = order.into_iter().map(ThreadAxis::Mode).collect();
        } else {
            l.local = order;
        }
        l.normalized()
    }

    /// Each element on its own thread; threads enumerate the shape row-major.
    pub fn spatial(shape: &[i64]) -> RegisterLayout {
        Self::primitive(shape, true, false)
    }

    /// Like [`RegisterLayout::spatial`], but threads enumerate the shape column-major.
    pub fn column_spatial(shape: &[i64]) -> RegisterLayout {
        Self::primitive(shape, true, true)
    }

    /// All elements on one thread, numbered row-major.
    pub fn local(shape: &[i64]) -> RegisterLayout {
        Self::primitive(shape, false, false)
    }

    /// Like [`RegisterLayout::local`], numbered column-major.
    pub fn column_local(shape: &[i64]) -> RegisterLayout {
        Self::primitive(shape, false, true)
    }

    /// A rank-`rank` layout with one element, held by `threads` threads at once.
    pub fn replicate(rank: usize, threads: i64) -> RegisterLayout {
        RegisterLayout {
            shape: vec![1; rank],
            modes: vec![],
            spatial: vec![ThreadAxis::Replicate(threads)],
            local: vec![],
        }
        .normalized()
    }

    /// The Kronecker-like product: `self` outer, `inner` inner. The result's shape is the
    /// elementwise product; thread and local indices are `outer * inner_count + inner`.
    pub fn compose(&self, inner: &RegisterLayout) -> RegisterLayout {
        assert_eq!(
            self.rank(),
            inner.rank(),
            "composed layouts must have the same rank"
        );
        let off = self.modes.len();
        let shape = self
            .shape
            .iter()
            .zip(&inner.shape)
            .map(|(a, b)| a * b)
            .collect();
        let mut modes = self.modes.clone();
        modes.extend(inner.modes.iter().cloned());
        let mut spatial = self.spatial.clone();
        spatial.extend(inner.spatial.iter().map(|a| match a {
            ThreadAxis::Mode(m) => ThreadAxis::Mode(m + off),
            ThreadAxis::Replicate(n) => ThreadAxis::Replicate(*n),
        }));
        let mut local = self.local.clone();
        local.extend(inner.local.iter().map(|m| m + off));
        RegisterLayout {
            shape,
            modes,
            spatial,
            local,
        }
        .normalized()
    }

    /// Drops size-1 modes so that equal layouts compare equal more often.
    fn normalized(mut self) -> RegisterLayout {
        let keep: Vec<bool> = self.modes.iter().map(|m| m.size != 1).collect();
        let mut remap = vec![usize::MAX; self.modes.len()];
        let mut n = 0;
        for (i, k) in keep.iter().enumerate() {
            if *k {
                remap[i] = n;
                n += 1;
            }
        }
        self.modes = self
            .modes
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(m, _)| m.clone())
            .collect();
        self.spatial = self
            .spatial
            .iter()
            .filter_map(|a| match a {
                ThreadAxis::Mode(m) if keep[*m] => Some(ThreadAxis::Mode(remap[*m])),
                ThreadAxis::Mode(_) => None,
                ThreadAxis::Replicate(1) => None,
                ThreadAxis::Replicate(r) => Some(ThreadAxis::Replicate(*r)),
            })
            .collect();
        self.local = self
            .local
            .iter()
            .filter(|m| keep[**m])
            .map(|m| remap[*m])
            .collect();
        self
    }

    /// The tensor shape the layout covers.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// Number of tensor dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of threads the layout spreads over.
    pub fn num_threads(&self) -> i64 {
        self.spatial
            .iter()
            .map(|a| self.axis_size(a))
            .fold(1, i64::saturating_mul)
    }

    /// Number of elements each thread keeps (saturating: the register check reports tiles
    /// too large to count).
    pub fn local_size(&self) -> i64 {
        self.local
            .iter()
            .map(|&m| self.modes[m].size)
            .fold(1, i64::saturating_mul)
    }

    fn axis_size(&self, a: &ThreadAxis) -> i64 {
        match a {
            ThreadAxis::Mode(m) => self.modes[*m].size,
            ThreadAxis::Replicate(n) => *n,
        }
    }

    /// Stride of mode `m` within its dimension: the product of the later modes of that dim.
    fn mode_stride(&self, m: usize) -> i64 {
        let dim = self.modes[m].dim;
        self.modes[m + 1..]
            .iter()
            .filter(|x| x.dim == dim)
            .map(|x| x.size)
            .product()
    }

    /// The terms that make up each dimension's coordinate as a function of the thread index.
    pub fn thread_terms(&self) -> Vec<Vec<Term>> {
        let mut out = vec![vec![]; self.rank()];
        let mut div = 1;
        for a in self.spatial.iter().rev() {
            let size = self.axis_size(a);
            if let ThreadAxis::Mode(m) = a {
                out[self.modes[*m].dim].push(Term {
                    div,
                    modulus: size,
                    stride: self.mode_stride(*m),
                });
            }
            div *= size;
        }
        out
    }

    /// The terms of the thread index that select a replicated copy: a thread holds the first
    /// copy of its elements when every term is 0 (and its index is below
    /// [`RegisterLayout::num_threads`]; the indices of a larger group wrap around, as the
    /// thread terms do). Instructions that must act once per element (atomics) run on those
    /// threads only.
    pub fn replica_terms(&self) -> Vec<Term> {
        let mut out = vec![];
        let mut div = 1;
        for a in self.spatial.iter().rev() {
            let size = self.axis_size(a);
            if let ThreadAxis::Replicate(n) = a {
                out.push(Term {
                    div,
                    modulus: *n,
                    stride: 1,
                });
            }
            div *= size;
        }
        out
    }

    /// Whether thread `thread` of the group holds the first copy of its elements (see
    /// [`RegisterLayout::replica_terms`]).
    pub fn is_first_copy(&self, thread: i64) -> bool {
        thread < self.num_threads() && self.replica_terms().iter().all(|t| t.eval(thread) == 0)
    }

    /// The terms that make up each dimension's coordinate as a function of the local index.
    pub fn local_terms(&self) -> Vec<Vec<Term>> {
        let mut out = vec![vec![]; self.rank()];
        let mut div = 1;
        for &m in self.local.iter().rev() {
            let size = self.modes[m].size;
            out[self.modes[m].dim].push(Term {
                div,
                modulus: size,
                stride: self.mode_stride(m),
            });
            div *= size;
        }
        out
    }

    /// The coordinate contributed by the thread index alone.
    pub fn thread_coords(&self, thread: i64) -> Vec<i64> {
        self.thread_terms()
            .iter()
            .map(|ts| ts.iter().map(|t| t.eval(thread)).sum())
            .collect()
    }

    /// The coordinate contributed by the local index alone.
    pub fn local_coords(&self, local: i64) -> Vec<i64> {
        self.local_terms()
            .iter()
            .map(|ts| ts.iter().map(|t| t.eval(local)).sum())
            .collect()
    }

    /// The logical coordinates of local element `local` of thread `thread`.
    pub fn coords(&self, thread: i64, local: i64) -> Vec<i64> {
        let t = self.thread_coords(thread);
        let l = self.local_coords(local);
        t.iter().zip(&l).map(|(a, b)| a + b).collect()
    }

    /// The layout of the transposed tensor (`perm[i]` is the source dim of result dim `i`).
    pub fn permute(&self, perm: &[usize]) -> RegisterLayout {
        assert_eq!(perm.len(), self.rank());
        let mut inverse = vec![0; perm.len()];
        for (new, &old) in perm.iter().enumerate() {
            inverse[old] = new;
        }
        RegisterLayout {
            shape: perm.iter().map(|&d| self.shape[d]).collect(),
            modes: self
                .modes
                .iter()
                .map(|m| Mode {
                    dim: inverse[m.dim],
                    size: m.size,
                })
                .collect(),
            spatial: self.spatial.clone(),
            local: self.local.clone(),
        }
    }

    /// Whether two layouts place every element identically (a functional comparison, which
    /// sees through different factorizations of the same mapping). Coordinates are the sum of
    /// a thread part and a local part that are both zero at index zero, so comparing the two
    /// parts separately is exact.
    pub fn same_mapping(&self, other: &RegisterLayout) -> bool {
        self.shape == other.shape
            && self.num_threads() == other.num_threads()
            && self.local_size() == other.local_size()
            && (0..self.num_threads()).all(|t| self.thread_coords(t) == other.thread_coords(t))
            && (0..self.local_size()).all(|l| self.local_coords(l) == other.local_coords(l))
    }

    /// Whether every element of the shape is held by at least one thread and no thread holds
    /// the same element twice.
    pub fn is_valid(&self) -> bool {
        let total: i64 = self.shape.iter().product();
        let mut seen = vec![false; total as usize];
        for t in 0..self.num_threads() {
            let mut mine = vec![false; total as usize];
            for l in 0..self.local_size() {
                let c = self.coords(t, l);
                let mut flat = 0;
                for (d, &x) in c.iter().enumerate() {
                    if x < 0 || x >= self.shape[d] {
                        return false;
                    }
                    flat = flat * self.shape[d] + x;
                }
                if mine[flat as usize] {
                    return false;
                }
                mine[flat as usize] = true;
                seen[flat as usize] = true;
            }
        }
        seen.iter().all(|s| *s)
    }
}

impl fmt::Display for RegisterLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(f, "layout([{}], threads=[", dims(&self.shape))?;
        for (i, a) in self.spatial.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match a {
                ThreadAxis::Mode(m) => {
                    write!(f, "d{}:{}", self.modes[*m].dim, self.modes[*m].size)?
                }
                ThreadAxis::Replicate(n) => write!(f, "rep:{n}")?,
            }
        }
        f.write_str("], locals=[")?;
        for (i, &m) in self.local.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "d{}:{}", self.modes[m].dim, self.modes[m].size)?;
        }
        f.write_str("])")
    }
}
