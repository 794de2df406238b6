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

mod views;

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

    /// The extent of dimension `dim` that the modes cover: the shape's, or more in a masked
    /// layout ([`RegisterLayout::masked_to`]).
    pub fn covered(&self, dim: usize) -> i64 {
        self.modes
            .iter()
            .filter(|m| m.dim == dim)
            .map(|m| m.size)
            .fold(1, i64::saturating_mul)
    }

    /// The dimensions whose modes cover more than the tensor's extent, with those extents
    /// (empty unless the layout is masked).
    pub fn masked_dims(&self) -> Vec<(usize, i64)> {
        (0..self.rank())
            .filter(|&d| self.covered(d) > self.shape[d])
            .map(|d| (d, self.shape[d]))
            .collect()
    }

    /// Whether some registers of the layout hold no element of the tensor (a masked layout).
    pub fn is_masked(&self) -> bool {
        !self.masked_dims().is_empty()
    }

    /// This layout for a smaller tensor of `shape` (of the same rank, no extent larger than
    /// this layout's): a *masked* layout. The threads and registers are this layout's; those
    /// at coordinates beyond `shape` hold no element (the rest of a last vector, the threads
    /// past the end of a row), and instructions leave them out: loads fill them, stores skip
    /// them, reductions take them as their identity. How a width that does not divide among
    /// the threads is laid out: 1000 columns over 128 threads as 1024 = 128 × 8.
    pub fn masked_to(&self, shape: &[i64]) -> RegisterLayout {
        assert_eq!(shape.len(), self.rank(), "a masked layout keeps the rank");
        assert!(
            shape
                .iter()
                .zip(&self.shape)
                .all(|(s, c)| *s >= 0 && s <= c),
            "a masked layout covers its shape"
        );
        RegisterLayout {
            shape: shape.to_vec(),
            ..self.clone()
        }
    }

    /// Whether coordinates `c` (as [`RegisterLayout::coords`] gives them) name an element of
    /// the tensor, not a masked-off register.
    pub fn holds(&self, c: &[i64]) -> bool {
        c.iter().zip(&self.shape).all(|(x, n)| x < n)
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

    /// The same elements in each thread, in another register order: local mode `order[i]` of
    /// this layout becomes the `i`-th (outermost first). A kernel that prepacks data so that
    /// two registers it wants side by side sit in one word uses it with `relabel`, and the
    /// conversion back to the original order is a renaming of registers.
    ///
    /// ```
    /// use tilus::layout::RegisterLayout;
    /// let l = RegisterLayout::local(&[2, 4]);
    /// let r = l.reorder_locals(&[1, 0]);
    /// assert_eq!(r.coords(0, 1), vec![1, 0]); // register 1 is now the next row
    /// assert!(r.in_thread_locals(&l).is_some());
    /// ```
    pub fn reorder_locals(&self, order: &[usize]) -> RegisterLayout {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        assert!(
            sorted == (0..self.local.len()).collect::<Vec<_>>(),
            "reorder_locals: {order:?} is not an order of {} local modes",
            self.local.len()
        );
        RegisterLayout {
            local: order.iter().map(|&i| self.local[i]).collect(),
            ..self.clone()
        }
    }

    /// The bits of the thread index that select positions along dimension `dim`, when every
    /// mode of `dim` that threads index has a power-of-two extent at a power-of-two position
    /// (so that the threads which share everything but their position along `dim` are those
    /// that differ in exactly these bits); `None` otherwise.
    pub fn thread_bits(&self, dim: usize) -> Option<u64> {
        let mut mask = 0u64;
        for t in &self.thread_terms()[dim] {
            let pow2 = |v: i64| v > 0 && (v as u64).is_power_of_two();
            if !pow2(t.div) || !pow2(t.modulus) || t.div.saturating_mul(t.modulus) > 1 << 40 {
                return None;
            }
            mask |= (t.modulus as u64 - 1) * t.div as u64;
        }
        Some(mask)
    }

    /// The layout an operand of `shape` needs in an elementwise expression whose result has
    /// this layout (`shape` broadcasts to this layout's shape, numpy-style: missing leading
    /// dimensions and dimensions of extent 1 repeat): this layout collapsed along the broadcast
    /// dimensions, with the missing leading ones removed.
    pub fn broadcast_operand(&self, shape: &[i64]) -> RegisterLayout {
        let (rank, r) = (self.rank(), shape.len());
        let lead = rank - r.min(rank);
        let collapsed: Vec<usize> = (0..rank)
            .filter(|&d| d < lead || (shape[d - lead] == 1 && self.shape()[d] != 1))
            .collect();
        self.collapse(&collapsed)
            .remove_dims(&(0..lead).collect::<Vec<_>>())
    }

    /// The layout of a reduction of this layout's tensor along `dim`: collapsed along it, and
    /// without it unless `keepdim` (a rank-1 result keeps its single dimension).
    pub fn reduced(&self, dim: usize, keepdim: bool) -> RegisterLayout {
        let l = self.collapse(&[dim]);
        if keepdim || l.rank() == 1 {
            l
        } else {
            l.remove_dims(&[dim])
        }
    }

    /// The layout of the same tensor with dimensions `dims` reduced to extent 1: threads that
    /// held different positions along them now hold the same element (they replicate it), and
    /// a thread's local elements along them are gone. This is the layout of a reduction's
    /// result over `dims`, and the layout a tile broadcast along `dims` needs to meet a tile of
    /// this layout element for element in the same threads.
    pub fn collapse(&self, dims: &[usize]) -> RegisterLayout {
        let gone = |m: usize| dims.contains(&self.modes[m].dim);
        let mut remap = vec![usize::MAX; self.modes.len()];
        let mut modes = vec![];
        for (m, mode) in self.modes.iter().enumerate() {
            if !gone(m) {
                remap[m] = modes.len();
                modes.push(mode.clone());
            }
        }
        let spatial = self
            .spatial
            .iter()
            .map(|a| match a {
                ThreadAxis::Mode(m) if gone(*m) => ThreadAxis::Replicate(self.modes[*m].size),
                ThreadAxis::Mode(m) => ThreadAxis::Mode(remap[*m]),
                ThreadAxis::Replicate(n) => ThreadAxis::Replicate(*n),
            })
            .collect();
        let local = self
            .local
            .iter()
            .filter(|&&m| !gone(m))
            .map(|&m| remap[m])
            .collect();
        let shape = self
            .shape
            .iter()
            .enumerate()
            .map(|(d, &n)| if dims.contains(&d) { 1 } else { n })
            .collect();
        RegisterLayout {
            shape,
            modes,
            spatial,
            local,
        }
        .normalized()
    }

    /// The layout without dimensions `dims`, which must have extent 1 (`squeeze`).
    pub fn remove_dims(&self, dims: &[usize]) -> RegisterLayout {
        debug_assert!(dims.iter().all(|&d| self.shape[d] == 1));
        let new_dim = |d: usize| d - dims.iter().filter(|&&x| x < d).count();
        RegisterLayout {
            shape: self
                .shape
                .iter()
                .enumerate()
                .filter(|(d, _)| !dims.contains(d))
                .map(|(_, &n)| n)
                .collect(),
            modes: self
                .modes
                .iter()
                .map(|m| Mode {
                    dim: new_dim(m.dim),
                    size: m.size,
                })
                .collect(),
            spatial: self.spatial.clone(),
            local: self.local.clone(),
        }
    }

    /// The layout with a dimension of extent 1 inserted before each position of `at`
    /// (positions in the result; `unsqueeze`).
    pub fn insert_dims(&self, at: &[usize]) -> RegisterLayout {
        let rank = self.rank() + at.len();
        let mut old_of_new = vec![None; rank];
        let mut next = 0;
        for (d, slot) in old_of_new.iter_mut().enumerate() {
            if !at.contains(&d) {
                *slot = Some(next);
                next += 1;
            }
        }
        let new_of_old: Vec<usize> = (0..rank).filter(|d| !at.contains(d)).collect();
        RegisterLayout {
            shape: old_of_new
                .iter()
                .map(|o| o.map_or(1, |o| self.shape[o]))
                .collect(),
            modes: self
                .modes
                .iter()
                .map(|m| Mode {
                    dim: new_of_old[m.dim],
                    size: m.size,
                })
                .collect(),
            spatial: self.spatial.clone(),
            local: self.local.clone(),
        }
    }

    /// For each local element of `self`, the local element of `other` that holds the same
    /// coordinates in the same thread once the dimensions where `other` has extent 1 are
    /// pinned to 0 (`other` is `self` collapsed along them): how an elementwise instruction
    /// reads a broadcast operand. `None` when some thread of `self` does not hold its element
    /// of `other` (the layouts do not fit).
    pub fn broadcast_locals(&self, other: &RegisterLayout) -> Option<Vec<usize>> {
        if other.rank() != self.rank() {
            return None;
        }
        let pin = |c: &mut Vec<i64>| {
            for (d, x) in c.iter_mut().enumerate() {
                if other.shape[d] == 1 {
                    *x = 0;
                }
            }
        };
        let mut table = Vec::with_capacity(self.local_size().max(0) as usize);
        // coordinates -> the first local index holding them (a map: tiles can hold many
        // thousands of locals per thread, and a search per local would be quadratic)
        let mut theirs: std::collections::HashMap<Vec<i64>, usize> =
            std::collections::HashMap::with_capacity(other.local_size().max(0) as usize);
        for l in (0..other.local_size()).rev() {
            theirs.insert(other.local_coords(l), l as usize);
        }
        for l in 0..self.local_size() {
            let mut c = self.local_coords(l);
            pin(&mut c);
            table.push(*theirs.get(&c)?);
        }
        // the thread parts must agree too
        for t in 0..self.num_threads() {
            let mut c = self.thread_coords(t);
            pin(&mut c);
            if other.thread_coords(t % other.num_threads().max(1)) != c {
                return None;
            }
        }
        Some(table)
    }

    /// For each local element of `self`, the local element of `src` (a layout of the same
    /// shape) that holds the same coordinates in the same thread, the same table for every
    /// thread: how a conversion from `src` to `self` stays in registers (renames). `None` when
    /// some thread needs an element its part of `src` does not hold, or the tables differ
    /// between threads (registers are indexed at compile time).
    pub fn in_thread_locals(&self, src: &RegisterLayout) -> Option<Vec<usize>> {
        if self.shape != src.shape {
            return None;
        }
        self.in_thread_locals_of(src, &|c: &[i64]| c.to_vec())
    }

    /// [`RegisterLayout::in_thread_locals`] where element `c` of `self` is element `source(c)`
    /// of `src` (a repetition: `src` may be smaller).
    pub fn in_thread_locals_of(
        &self,
        src: &RegisterLayout,
        source: &dyn Fn(&[i64]) -> Vec<i64>,
    ) -> Option<Vec<usize>> {
        if self.rank() != src.rank() {
            return None;
        }
        let (mine, theirs) = (self.num_threads().max(1), src.num_threads().max(1));
        let mut table: Option<Vec<usize>> = None;
        for t in 0..mine.max(theirs) {
            let held: std::collections::HashMap<Vec<i64>, usize> = (0..src.local_size())
                .rev()
                .map(|l| (src.coords(t % theirs, l), l as usize))
                .collect();
            let row: Vec<usize> = (0..self.local_size())
                .map(|l| held.get(&source(&self.coords(t % mine, l))).copied())
                .collect::<Option<_>>()?;
            match &table {
                None => table = Some(row),
                Some(x) if *x == row => {}
                Some(_) => return None,
            }
        }
        table
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
    /// the same element twice (in a masked layout, the registers beyond the shape hold none).
    ///
    /// A layout that holds more than `MAX_CHECKED_ELEMENTS` copies in all is not valid: no
    /// register budget holds it, and checking it would take that much memory.
    pub fn is_valid(&self) -> bool {
        let total = self
            .shape
            .iter()
            .try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) });
        let held = self.num_threads().checked_mul(self.local_size());
        let (Some(total), Some(held)) = (total, held) else {
            return false;
        };
        // every element at least once needs at least as many copies as elements
        if held < total || held > MAX_CHECKED_ELEMENTS {
            return false;
        }
        let mut seen = vec![false; total as usize];
        let mut mine = Vec::with_capacity(self.local_size() as usize);
        let cover: Vec<i64> = (0..self.rank()).map(|d| self.covered(d)).collect();
        for t in 0..self.num_threads() {
            mine.clear();
            for l in 0..self.local_size() {
                let c = self.coords(t, l);
                let mut flat = 0;
                if c.iter().zip(&cover).any(|(&x, &n)| x < 0 || x >= n) {
                    return false;
                }
                // a masked-off register holds nothing
                if !self.holds(&c) {
                    continue;
                }
                for (d, &x) in c.iter().enumerate() {
                    flat = flat * self.shape[d] + x;
                }
                mine.push(flat);
                seen[flat as usize] = true;
            }
            // no thread holds an element twice
            mine.sort_unstable();
            if mine.windows(2).any(|w| w[0] == w[1]) {
                return false;
            }
        }
        seen.iter().all(|s| *s)
    }
}

/// The most element copies [`RegisterLayout::is_valid`] checks (a layout of more is not
/// valid): 2^24, sixteen times the registers of a whole block.
pub const MAX_CHECKED_ELEMENTS: i64 = 1 << 24;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 threads (2 x 4) over a [4, 8] tile, each holding a 2 x 2 block.
    fn tile() -> RegisterLayout {
        RegisterLayout::spatial(&[2, 4]).compose(&RegisterLayout::local(&[2, 2]))
    }

    #[test]
    fn collapsing_a_dimension_replicates_its_threads_and_drops_its_locals() {
        let l = tile();
        let c = l.collapse(&[1]);
        assert_eq!(c.shape(), &[4, 1]);
        assert_eq!(c.num_threads(), 8);
        assert_eq!(c.local_size(), 2);
        // threads that differ only along dim 1 hold the same rows
        for t in 0..8 {
            for i in 0..2 {
                assert_eq!(c.coords(t, i)[0], l.coords(t, 2 * i)[0]);
                assert_eq!(c.coords(t, i)[1], 0);
            }
        }
    }

    #[test]
    fn broadcast_tables_read_the_collapsed_element_of_the_same_thread() {
        let l = tile();
        let c = l.collapse(&[1]);
        let table = l.broadcast_locals(&c).unwrap();
        assert_eq!(table, vec![0, 0, 1, 1]);
        // a layout that puts rows on other threads does not fit
        let other = RegisterLayout::local(&[4, 1]).compose(&RegisterLayout::replicate(2, 8));
        assert!(l.broadcast_locals(&other).is_none());
    }

    #[test]
    fn squeezing_and_unsqueezing_round_trip() {
        let c = tile().collapse(&[1]);
        let s = c.remove_dims(&[1]);
        assert_eq!(s.shape(), &[4]);
        let u = s.insert_dims(&[1]);
        assert!(u.same_mapping(&c));
        let lead = s.insert_dims(&[0]);
        assert_eq!(lead.shape(), &[1, 4]);
    }

    /// The thread bits that select positions along a dimension: the threads' modes along it,
    /// where each is a power of two; none where one is not (3 threads along a dimension
    /// cannot be told apart by a mask, and a reduction then goes through shared memory).
    #[test]
    fn thread_bits_are_the_masks_of_power_of_two_modes_only() {
        // [2, 4] threads, rows outermost: dimension 0 is thread bit 2, dimension 1 bits 0-1
        assert_eq!(tile().thread_bits(0), Some(0b100));
        assert_eq!(tile().thread_bits(1), Some(0b011));
        let three = RegisterLayout::spatial(&[3, 4]);
        assert_eq!(three.thread_bits(0), None);
        assert_eq!(RegisterLayout::spatial(&[4, 3]).thread_bits(1), None);
        // locals only: no thread bit
        assert_eq!(RegisterLayout::local(&[3, 4]).thread_bits(0), Some(0));
    }

    #[test]
    fn validity_allows_replicas_and_refuses_layouts_too_large_to_check() {
        assert!(tile().is_valid());
        // replicas on other threads are fine
        assert!(tile().compose(&RegisterLayout::replicate(2, 1)).is_valid());
        // 2^40 elements: refused at once, nothing allocated
        assert!(!RegisterLayout::local(&[1 << 20, 1 << 20]).is_valid());
        assert!(!RegisterLayout::spatial(&[1 << 13, 1 << 12]).is_valid());
    }

    /// [4, 8] covered, [3, 6] held: the registers at row 3 or column 6 and 7 hold nothing, and
    /// the first coordinate past each extent is out.
    #[test]
    fn a_masked_layout_holds_its_shape_and_nothing_past_it() {
        let m = tile().masked_to(&[3, 6]);
        assert_eq!(m.shape(), &[3, 6]);
        assert_eq!((m.covered(0), m.covered(1)), (4, 8));
        assert_eq!(m.masked_dims(), vec![(0, 3), (1, 6)]);
        assert!(m.is_masked() && !tile().is_masked());
        assert!(m.holds(&[2, 5]));
        assert!(!m.holds(&[3, 0]) && !m.holds(&[0, 6]));
        // every held element once, the masked-off registers skipped
        assert!(m.is_valid());
        let held = (0..m.num_threads())
            .flat_map(|t| (0..m.local_size()).map(move |l| (t, l)))
            .filter(|&(t, l)| m.holds(&m.coords(t, l)))
            .count();
        assert_eq!(held, 18);
        // only one dimension masked
        assert_eq!(tile().masked_to(&[4, 7]).masked_dims(), vec![(1, 7)]);
        assert!(tile().masked_to(&[4, 7]).is_valid());
    }
}

#[cfg(test)]
mod in_thread_tests {
    use super::RegisterLayout;

    #[test]
    fn a_conversion_stays_in_registers_only_where_each_thread_holds_its_elements() {
        // [2, 4] per thread, 8 threads along rows: the same elements, locals column-major
        let rows = RegisterLayout::local(&[2, 4]);
        let cols = RegisterLayout::column_local(&[2, 4]);
        let spread = RegisterLayout::spatial(&[8, 1]);
        let (a, b) = (spread.compose(&rows), spread.compose(&cols));
        assert_eq!(a.in_thread_locals(&a), Some((0..8).collect()));
        // element (r, c) is local 4r + c row-major and 2c + r column-major
        assert_eq!(b.in_thread_locals(&a), Some(vec![0, 4, 1, 5, 2, 6, 3, 7]));
        assert_eq!(a.in_thread_locals(&b), Some(vec![0, 2, 4, 6, 1, 3, 5, 7]));
        // thread t holding rows t and t + 8 instead of 2t and 2t + 1: other threads' rows
        let strided = RegisterLayout::local(&[2, 1])
            .compose(&spread)
            .compose(&RegisterLayout::local(&[1, 4]));
        assert_eq!(strided.shape(), a.shape());
        assert_eq!(strided.in_thread_locals(&a), None);
        // another shape never converts in place
        let other = spread.compose(&RegisterLayout::local(&[4, 2]));
        assert_eq!(other.in_thread_locals(&a), None);
    }
}
