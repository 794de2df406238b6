//! `#[derive(Tunable)]`: the derived space is the product of the `#[tune]` attributes in order
//! (the first varies slowest), and `from_binding` reads every point back into the struct.

use tilus::prelude::*;
use tilus::tune::Binding;

/// A script that does nothing: `Tunable` requires `Script`.
macro_rules! empty_script {
    ($t:ty) => {
        impl Script for $t {
            type Args = (PtrMut<f32>,);
            fn body(&self, k: &mut Kernel, _: Handles<Self::Args>) {
                k.blocks([1]);
                k.warps(1);
            }
        }
    };
}

/// The seed's v0 space, `@tilus.autotune("block_m, block_n", [...])` then
/// `@tilus.autotune("block_k", [16, 32, 64])`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, tilus::Tunable)]
#[tune(block_m, block_n = [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)])]
#[tune(block_k = [16, 32, 64])]
struct Seed {
    block_m: i32,
    block_n: i32,
    block_k: i32,
}
empty_script!(Seed);

/// Fields of several types, raw names, negative values, bools, and attributes that do not
/// follow the field order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(flag = [true, false])]
#[tune(r#type, offset = [(1, -1), (2, -9223372036854775808)])]
#[tune(stages = [3])]
struct Mixed {
    offset: i64,
    r#type: u8,
    stages: u32,
    flag: bool,
}
empty_script!(Mixed);

/// No fields: a space of one point with no names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
struct Fixed;
empty_script!(Fixed);

fn binding(pairs: &[(&str, i64)]) -> Binding {
    Binding(pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect())
}

#[test]
fn the_seed_space_has_15_points_first_attribute_slowest() {
    let space = Seed::space();
    assert_eq!(space.len(), 15);
    assert_eq!(
        space.describe(),
        "(block_m,block_n)=[[64, 128], [128, 128], [128, 256], [256, 128], [256, 256]] \
         x (block_k)=[[16], [32], [64]]"
    );
    let points: Vec<Seed> = space
        .bindings()
        .iter()
        .map(|b| Seed::from_binding(b).unwrap())
        .collect();
    let mut want = vec![];
    for (block_m, block_n) in [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)] {
        for block_k in [16, 32, 64] {
            want.push(Seed {
                block_m,
                block_n,
                block_k,
            });
        }
    }
    assert_eq!(points, want);
    assert_eq!(
        space.bindings()[0].to_string(),
        "block_m=64 block_n=128 block_k=16"
    );
    assert_eq!(
        space.bindings()[14].to_string(),
        "block_m=256 block_n=256 block_k=64"
    );
}

#[test]
fn mixed_fields_round_trip() {
    let space = Mixed::space();
    let bindings = space.bindings();
    assert_eq!(bindings.len(), 4);
    assert_eq!(
        bindings.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
        [
            "flag=1 type=1 offset=-1 stages=3",
            "flag=1 type=2 offset=-9223372036854775808 stages=3",
            "flag=0 type=1 offset=-1 stages=3",
            "flag=0 type=2 offset=-9223372036854775808 stages=3",
        ]
    );
    assert_eq!(
        Mixed::from_binding(&bindings[3]).unwrap(),
        Mixed {
            offset: i64::MIN,
            r#type: 2,
            stages: 3,
            flag: false,
        }
    );
    // the order of the binding's names does not matter, and extra names are ignored
    assert_eq!(
        Mixed::from_binding(&binding(&[
            ("stages", 7),
            ("extra", 5),
            ("flag", 1),
            ("offset", 9),
            ("type", 255),
        ])),
        Ok(Mixed {
            offset: 9,
            r#type: 255,
            stages: 7,
            flag: true,
        })
    );
}

#[test]
fn from_binding_errors_name_the_field_and_value() {
    let err = Seed::from_binding(&binding(&[
        ("block_m", 64),
        ("block_n", 1 << 40),
        ("block_k", 16),
    ]))
    .unwrap_err();
    assert_eq!(err, "Seed: block_n=1099511627776 does not fit in i32");
    let err = Seed::from_binding(&binding(&[("block_m", 64), ("block_n", 128)])).unwrap_err();
    assert_eq!(
        err,
        "Seed: the binding `block_m=64 block_n=128` has no value for `block_k`"
    );
    let err = Mixed::from_binding(&binding(&[
        ("offset", 0),
        ("type", -1),
        ("stages", 1),
        ("flag", 0),
    ]))
    .unwrap_err();
    assert_eq!(err, "Mixed: type=-1 does not fit in u8");
    let err = Mixed::from_binding(&binding(&[
        ("offset", 0),
        ("type", 1),
        ("stages", 1),
        ("flag", 2),
    ]))
    .unwrap_err();
    assert_eq!(err, "Mixed: flag=2 is not a bool (expected 0 or 1)");
}

#[test]
fn a_struct_without_fields_has_one_point() {
    let bindings = Fixed::space().bindings();
    assert_eq!(bindings, [Binding(vec![])]);
    assert_eq!(Fixed::from_binding(&bindings[0]), Ok(Fixed));
}

#[test]
fn the_trait_is_the_autotuners() {
    fn space_of<T: tilus::tune::Tunable>() -> usize {
        T::space().len()
    }
    assert_eq!(space_of::<Seed>(), 15);
    assert_eq!(space_of::<Mixed>(), 4);
}

#[test]
fn settings_replace_hyperparameters_by_name() {
    let base = <Seed as Tunable>::from_binding(&<Seed as Tunable>::space().bindings()[0]).unwrap();
    let b = base.to_binding().unwrap();
    assert_eq!(
        <Seed as Tunable>::from_binding(&b).unwrap().to_binding(),
        Some(b.clone())
    );
    let name = b.0[0].0.clone();
    let changed = tilus::tune::with_settings(&base, &[(name.clone(), 256)]).unwrap();
    assert_eq!(changed.to_binding().unwrap().get(&name), Some(256));
    let err = tilus::tune::with_settings(&base, &[("nope".into(), 1)]).unwrap_err();
    assert!(err.contains("has no hyperparameter `nope`"), "{err}");
}
