//! Register layouts seen with another shape: a reshape (squeeze and unsqueeze are reshapes)
//! relabels the coordinates of the very same registers, and a slice keeps some of each
//! thread's local elements. Neither moves data between threads: each is possible only when the
//! layout's modes fit the new shape, and says why not otherwise.

use super::{Mode, RegisterLayout, ThreadAxis};

/// Row-major strides of a shape.
fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1].saturating_mul(shape[d + 1]);
    }
    s
}

/// Whether a mode indexes threads (else it indexes each thread's local elements).
fn is_spatial(l: &RegisterLayout, m: usize) -> bool {
    l.spatial.contains(&ThreadAxis::Mode(m))
}

impl RegisterLayout {
    /// The layout of the same registers seen with `shape` (the same elements in row-major
    /// order): every thread keeps the same local elements, at the coordinates the new shape
    /// gives them. Each mode (a factor of a dimension, over threads or locals) must fall into
    /// one dimension of the new shape, or split at the new dimensions' boundaries into whole
    /// factors; `Err` says which mode does not.
    pub fn reshape(&self, shape: &[i64]) -> Result<RegisterLayout, String> {
        let count = |s: &[i64]| s.iter().try_fold(1i64, |a, &n| a.checked_mul(n));
        let (Some(total), Some(to)) = (count(&self.shape), count(shape)) else {
            return Err(format!(
                "{:?} or {shape:?} has too many elements",
                self.shape
            ));
        };
        if to != total || shape.iter().any(|&n| n <= 0) {
            return Err(format!(
                "{:?} has {total} elements, {shape:?} has {to}",
                self.shape
            ));
        }
        let old_strides = row_major(&self.shape);
        let new_strides = row_major(shape);
        // each mode's stride in the flat row-major index, split into pieces (outer first) that
        // each lie in one dimension of the new shape: (new dim, size, flat stride)
        let mut pieces: Vec<Vec<(usize, i64, i64)>> = vec![];
        for (m, mode) in self.modes.iter().enumerate() {
            let mut sigma = self.mode_stride(m) * old_strides[mode.dim];
            let mut left = mode.size;
            let mut mine = vec![];
            while left > 1 {
                let Some(e) = (0..shape.len())
                    .find(|&e| new_strides[e] <= sigma && sigma < new_strides[e] * shape[e])
                else {
                    return Err(format!(
                        "a mode of {sigma} elements' stride lies in no dimension"
                    ));
                };
                let end = new_strides[e] * shape[e];
                if end % sigma != 0 {
                    return Err(self.split_error(m, shape));
                }
                let fits = end / sigma;
                let size = if left <= fits {
                    left
                } else if left % fits == 0 {
                    fits
                } else {
                    return Err(self.split_error(m, shape));
                };
                mine.push((e, size, sigma));
                sigma *= size;
                left /= size;
            }
            mine.reverse();
            pieces.push(mine);
        }
        // the new modes, dimension by dimension, outer (larger flat stride) first
        let mut order: Vec<(usize, usize)> = vec![]; // (old mode, piece)
        for (m, ps) in pieces.iter().enumerate() {
            for p in 0..ps.len() {
                order.push((m, p));
            }
        }
        order.sort_by_key(|&(m, p)| (pieces[m][p].0, std::cmp::Reverse(pieces[m][p].2)));
        // the pieces of one dimension must chain (each stride the product of the sizes inside
        // it) and cover it, which holds for every layout whose modes cover their dimensions
        for (e, (&q, &n)) in new_strides.iter().zip(shape).enumerate() {
            let mut want = q;
            for &(m, p) in order.iter().rev().filter(|&&(m, p)| pieces[m][p].0 == e) {
                let (_, size, sigma) = pieces[m][p];
                if sigma != want {
                    return Err(format!(
                        "the factors of the layout do not cover dimension {e} of {shape:?}"
                    ));
                }
                want *= size;
            }
            if want != q * n {
                return Err(format!(
                    "the factors of the layout do not cover dimension {e} of {shape:?}"
                ));
            }
        }
        let mut index: Vec<Vec<usize>> = pieces.iter().map(|ps| vec![0; ps.len()]).collect();
        let mut modes = Vec::with_capacity(order.len());
        for (i, &(m, p)) in order.iter().enumerate() {
            let (dim, size, _) = pieces[m][p];
            index[m][p] = i;
            modes.push(Mode { dim, size });
        }
        let spatial = self
            .spatial
            .iter()
            .flat_map(|a| match a {
                ThreadAxis::Mode(m) => index[*m].iter().map(|&i| ThreadAxis::Mode(i)).collect(),
                ThreadAxis::Replicate(n) => vec![ThreadAxis::Replicate(*n)],
            })
            .collect();
        let local = self.local.iter().flat_map(|&m| index[m].clone()).collect();
        Ok(RegisterLayout {
            shape: shape.to_vec(),
            modes,
            spatial,
            local,
        }
        .normalized())
    }

    fn split_error(&self, m: usize, shape: &[i64]) -> String {
        let what = if is_spatial(self, m) {
            "threads"
        } else {
            "each thread's local elements"
        };
        format!(
            "{what} run along dimension {} of {:?} in a factor of {}, which the dimensions of \
             {shape:?} would cut apart",
            self.modes[m].dim, self.shape, self.modes[m].size
        )
    }

    /// The elements `start .. start + len` along `dim`, when every thread keeps whole local
    /// elements of them (the slice picks the same local elements in every thread): the layout
    /// of the slice. `Err` when the range splits the threads along `dim` (some threads would
    /// hold none of it) or does not fall on whole factors of the layout.
    pub fn slice(&self, dim: usize, start: i64, len: i64) -> Result<RegisterLayout, String> {
        self.slice_modes(dim, start, len)
            .map(|(l, _)| l.normalized())
    }

    /// The layout of the elements packed `k` to a word in a tile laid out as `self`: each
    /// word becomes `k` consecutive elements along the innermost dimension, in the same
    /// thread, local `i` of the result being part `i % k` of word `i / k`.
    pub fn unpacked(&self, k: i64) -> RegisterLayout {
        let mut inner = vec![1; self.rank()];
        if let Some(last) = inner.last_mut() {
            *last = k;
        }
        self.compose(&RegisterLayout::local(&inner))
    }

    /// The layout of words packing `k` consecutive elements each, of a tile laid out as `self`
    /// (the inverse of [`RegisterLayout::unpacked`]): every thread must hold its elements of
    /// the innermost dimension `k` at a time, as its fastest local elements; `Err` says how
    /// the layout does not.
    pub fn packed(&self, k: i64) -> Result<RegisterLayout, String> {
        let last = self
            .rank()
            .checked_sub(1)
            .ok_or("a tile of rank 0 has no elements to pack")?;
        if k <= 0 || self.shape[last] % k != 0 {
            return Err(format!(
                "the innermost extent {} is not a multiple of {k}",
                self.shape[last]
            ));
        }
        let fast = self.local.last().copied();
        let inner = self.modes.iter().rposition(|m| m.dim == last);
        match (fast, inner) {
            (Some(f), Some(i)) if f == i && self.modes[f].size % k == 0 => {
                let mut l = self.clone();
                l.modes[f].size /= k;
                l.shape[last] /= k;
                Ok(l.normalized())
            }
            _ => Err(format!(
                "each thread must hold its elements of the innermost dimension {k} at a time, \
                 as its fastest-varying local elements (a vectorized layout does)"
            )),
        }
    }

    /// [`RegisterLayout::slice`] and, for each local element of the slice, the local element
    /// of `self` it is (one entry per register of a thread: for layouts that fit in registers).
    pub fn slice_locals(
        &self,
        dim: usize,
        start: i64,
        len: i64,
    ) -> Result<(RegisterLayout, Vec<usize>), String> {
        let (sliced, offsets) = self.slice_modes(dim, start, len)?;
        // each local element of the slice, as digits over the local modes (the kept sizes),
        // is the element of `self` with the digits moved by the offsets
        let kept = |m: usize| sliced.modes[m].size;
        let count: i64 = self.local.iter().map(|&m| kept(m)).product();
        let mut table = Vec::with_capacity(count.max(0) as usize);
        for l in 0..count {
            let (mut rest, mut src, mut scale) = (l, 0i64, 1i64);
            for &m in self.local.iter().rev() {
                let digit = rest % kept(m);
                rest /= kept(m);
                src += (digit + offsets[m]) * scale;
                scale *= self.modes[m].size;
            }
            table.push(src as usize);
        }
        Ok((sliced.normalized(), table))
    }

    /// The slice's layout before normalization (its modes are `self`'s, some smaller) and the
    /// first kept index of each mode.
    fn slice_modes(
        &self,
        dim: usize,
        start: i64,
        len: i64,
    ) -> Result<(RegisterLayout, Vec<i64>), String> {
        let extent = *self.shape.get(dim).ok_or("no such dimension")?;
        if start < 0 || len <= 0 || start.checked_add(len).is_none_or(|end| end > extent) {
            return Err(format!(
                "{start}..{} is not inside 0..{extent}",
                start.saturating_add(len)
            ));
        }
        let mut sizes: Vec<i64> = self.modes.iter().map(|m| m.size).collect();
        let mut offsets = vec![0i64; self.modes.len()];
        let (mut lo, n) = (start, len);
        for m in (0..self.modes.len()).filter(|&m| self.modes[m].dim == dim) {
            let stride = self.mode_stride(m);
            let size = self.modes[m].size;
            if n == stride * size {
                break;
            }
            let (a, keep) = if lo % stride == 0 && n % stride == 0 {
                (lo / stride, n / stride)
            } else if lo / stride == (lo + n - 1) / stride {
                (lo / stride, 1)
            } else {
                return Err(format!(
                    "the range {start}..{} of dimension {dim} cuts a factor of {size} of its \
                     elements apart",
                    start + len
                ));
            };
            if is_spatial(self, m) {
                return Err(format!(
                    "dimension {dim} is spread over threads in a factor of {size}; the range \
                     {start}..{} would keep only some of those threads",
                    start + len
                ));
            }
            sizes[m] = keep;
            offsets[m] = a;
            lo -= a * stride;
            if keep > 1 || n == stride {
                // the inner factors are whole
                break;
            }
        }
        let mut shape = self.shape.clone();
        shape[dim] = len;
        let sliced = RegisterLayout {
            shape,
            modes: self
                .modes
                .iter()
                .zip(&sizes)
                .map(|(m, &size)| Mode { dim: m.dim, size })
                .collect(),
            spatial: self.spatial.clone(),
            local: self.local.clone(),
        };
        Ok((sliced, offsets))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Layouts of every kind of factor: threads and locals interleaved in one dimension,
    /// replication, column-major thread order.
    fn layouts() -> Vec<RegisterLayout> {
        vec![
            RegisterLayout::spatial(&[2, 4]).compose(&RegisterLayout::local(&[2, 2])),
            RegisterLayout::local(&[2, 3]).compose(&RegisterLayout::spatial(&[4, 2])),
            RegisterLayout::local(&[4, 1])
                .compose(&RegisterLayout::column_spatial(&[2, 8]))
                .compose(&RegisterLayout::local(&[1, 2])),
            RegisterLayout::replicate(2, 2).compose(&RegisterLayout::spatial(&[4, 4])),
            RegisterLayout::local(&[8]).compose(&RegisterLayout::spatial(&[32])),
        ]
    }

    fn flat(c: &[i64], shape: &[i64]) -> i64 {
        c.iter().zip(shape).fold(0, |a, (x, n)| a * n + x)
    }

    /// Every shape with the same elements and at most 3 dimensions.
    fn shapes(total: i64) -> Vec<Vec<i64>> {
        let divs: Vec<i64> = (1..=total).filter(|d| total % d == 0).collect();
        let mut out = vec![vec![total]];
        for &a in &divs {
            out.push(vec![a, total / a]);
            for &b in divs.iter().filter(|&&b| (total / a) % b == 0) {
                out.push(vec![a, b, total / a / b]);
            }
        }
        out
    }

    #[test]
    fn reshapes_keep_every_register_at_its_element() {
        let mut accepted = 0;
        for l in layouts() {
            let total: i64 = l.shape().iter().product();
            for shape in shapes(total) {
                let Ok(r) = l.reshape(&shape) else { continue };
                accepted += 1;
                assert!(r.is_valid(), "{l} as {shape:?}: {r}");
                assert_eq!(
                    (r.num_threads(), r.local_size()),
                    (l.num_threads(), l.local_size())
                );
                for t in 0..l.num_threads() {
                    for i in 0..l.local_size() {
                        assert_eq!(
                            flat(&r.coords(t, i), &shape),
                            flat(&l.coords(t, i), l.shape()),
                            "{l} as {shape:?}: thread {t} local {i}"
                        );
                    }
                }
            }
        }
        assert!(accepted > 40, "{accepted}");
    }

    #[test]
    fn reshapes_that_cut_a_factor_apart_say_so() {
        // [6] as 3 locals of 2 threads: [2, 3] would cut the locals (stride 2) at 3
        let l = RegisterLayout::local(&[3]).compose(&RegisterLayout::spatial(&[2]));
        let why = l.reshape(&[2, 3]).unwrap_err();
        assert!(why.contains("local elements"), "{why}");
        assert!(l.reshape(&[3, 2]).is_ok());
        assert!(l.reshape(&[7]).is_err());
        // squeezing and unsqueezing always fit
        let c = layouts()[0].collapse(&[1]);
        let s = c.reshape(&[4]).unwrap();
        assert!(s.same_mapping(&c.remove_dims(&[1])));
        assert!(s
            .reshape(&[1, 4, 1])
            .unwrap()
            .same_mapping(&s.insert_dims(&[0, 2])));
    }

    #[test]
    fn slices_keep_whole_local_elements() {
        let mut accepted = 0;
        for l in layouts() {
            for dim in 0..l.rank() {
                let n = l.shape()[dim];
                for start in 0..n {
                    for len in 1..=n - start {
                        let Ok((s, table)) = l.slice_locals(dim, start, len) else {
                            continue;
                        };
                        accepted += 1;
                        assert!(s.is_valid(), "{l} [{start}, +{len}) of {dim}: {s}");
                        assert_eq!(s.num_threads(), l.num_threads());
                        assert_eq!(table.len() as i64, s.local_size());
                        for t in 0..l.num_threads() {
                            for (i, &src) in table.iter().enumerate() {
                                let mut want = s.coords(t, i as i64);
                                want[dim] += start;
                                assert_eq!(
                                    l.coords(t, src as i64),
                                    want,
                                    "{l} {dim} {start} {len}"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(accepted > 30, "{accepted}");
    }

    #[test]
    fn slices_that_split_threads_are_refused() {
        // 32 threads along [256], 8 locals outer: rows of 32 are whole locals
        let l = RegisterLayout::local(&[8]).compose(&RegisterLayout::spatial(&[32]));
        let (s, table) = l.slice_locals(0, 64, 96).unwrap();
        assert_eq!(s.local_size(), 3);
        assert_eq!(table, vec![2, 3, 4]);
        let why = l.slice(0, 0, 16).unwrap_err();
        assert!(why.contains("spread over threads"), "{why}");
        let why = l.slice(0, 16, 32).unwrap_err();
        assert!(why.contains("cuts a factor"), "{why}");
        assert!(l.slice(0, 250, 10).is_err());
    }
}
