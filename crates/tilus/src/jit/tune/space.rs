//! Search spaces: named axes whose values combine as a Cartesian product, as in the seed's
//! stacked `@tilus.autotune("block_m, block_n", [(64, 128), ...])` decorators.

use std::collections::BTreeSet;
use std::fmt;

/// One axis: one or more names bound together, and the tuples of values they take.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Axis {
    /// Names bound by this axis (`["block_m", "block_n"]`).
    pub names: Vec<String>,
    /// One tuple per choice, each as long as `names`.
    pub values: Vec<Vec<i64>>,
}

/// A search space: the product of its axes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Space {
    axes: Vec<Axis>,
}

/// A problem with a space's declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpaceError(pub String);

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpaceError {}

/// One point of a space: a value for every name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Binding(pub Vec<(String, i64)>);

impl Binding {
    /// The value bound to `name`.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// The value bound to `name` as an `i32` hyperparameter, or why there is none (what a
    /// hand-written [`Tunable::from_binding`](crate::tune::Tunable::from_binding) reports).
    ///
    /// ```
    /// use tilus::tune::Binding;
    /// let b = Binding(vec![("stages".into(), 4), ("huge".into(), 1 << 40)]);
    /// assert_eq!(b.get_i32("stages"), Ok(4));
    /// assert!(b.get_i32("block_m").unwrap_err().contains("no block_m"));
    /// assert!(b.get_i32("huge").unwrap_err().contains("out of range"));
    /// ```
    pub fn get_i32(&self, name: &str) -> Result<i32, String> {
        let v = self
            .get(name)
            .ok_or_else(|| format!("the binding has no {name}"))?;
        i32::try_from(v).map_err(|_| format!("{name} = {v} is out of range"))
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

impl Space {
    /// An empty space (one point with no names).
    pub fn new() -> Space {
        Space::default()
    }

    /// Adds an axis: `names` are bound together to each tuple of `values`. Fails on an empty
    /// axis, a tuple of the wrong length, or a name already bound by another axis.
    pub fn axis(mut self, names: &[&str], values: Vec<Vec<i64>>) -> Result<Space, SpaceError> {
        if names.is_empty() {
            return Err(SpaceError("an axis needs at least one name".into()));
        }
        if values.is_empty() {
            return Err(SpaceError(format!(
                "axis ({}) has no values",
                names.join(", ")
            )));
        }
        let mut seen: BTreeSet<&str> = self
            .axes
            .iter()
            .flat_map(|a| a.names.iter().map(|s| s.as_str()))
            .collect();
        for n in names {
            if !seen.insert(n) {
                return Err(SpaceError(format!("`{n}` is bound by two axes")));
            }
        }
        if let Some(v) = values.iter().find(|v| v.len() != names.len()) {
            return Err(SpaceError(format!(
                "axis ({}) has a value {v:?} of the wrong length",
                names.join(", ")
            )));
        }
        self.axes.push(Axis {
            names: names.iter().map(|s| s.to_string()).collect(),
            values,
        });
        Ok(self)
    }

    /// A one-name axis.
    pub fn values(self, name: &str, values: &[i64]) -> Result<Space, SpaceError> {
        self.axis(&[name], values.iter().map(|v| vec![*v]).collect())
    }

    /// The axes.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// Every point, the first axis varying slowest.
    pub fn bindings(&self) -> Vec<Binding> {
        let mut out = vec![Binding(vec![])];
        for axis in &self.axes {
            let mut next = Vec::with_capacity(out.len() * axis.values.len());
            for b in &out {
                for tuple in &axis.values {
                    let mut nb = b.clone();
                    nb.0.extend(axis.names.iter().cloned().zip(tuple.iter().copied()));
                    next.push(nb);
                }
            }
            out = next;
        }
        out
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// Whether the space has no points (never true for a space built with [`Space::axis`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A stable text form, for cache keys.
    pub fn describe(&self) -> String {
        self.axes
            .iter()
            .map(|a| format!("({})={:?}", a.names.join(","), a.values))
            .collect::<Vec<_>>()
            .join(" x ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_space_is_a_product_of_15_points() {
        let s = Space::new()
            .axis(
                &["block_m", "block_n"],
                vec![
                    vec![64, 128],
                    vec![128, 128],
                    vec![128, 256],
                    vec![256, 128],
                    vec![256, 256],
                ],
            )
            .unwrap()
            .values("block_k", &[16, 32, 64])
            .unwrap();
        let b = s.bindings();
        assert_eq!(b.len(), 15);
        assert_eq!(s.len(), 15);
        assert_eq!(b[0].to_string(), "block_m=64 block_n=128 block_k=16");
        assert_eq!(b[14].to_string(), "block_m=256 block_n=256 block_k=64");
        let unique: BTreeSet<&Binding> = b.iter().collect();
        assert_eq!(unique.len(), 15);
    }

    #[test]
    fn bad_spaces_are_errors() {
        assert!(Space::new().values("a", &[]).is_err());
        assert!(Space::new()
            .values("a", &[1])
            .unwrap()
            .values("a", &[2])
            .is_err());
        assert!(Space::new().axis(&["a", "b"], vec![vec![1]]).is_err());
        assert!(Space::new().axis(&[], vec![vec![]]).is_err());
    }
}
