//! Shrinking and showing a case that panics: after proptest's own shrinking, [`minimize`]
//! drops operations (and unwraps loops and thread groups) while the case still panics at the
//! same place, since proptest cannot drop the operations that tame cases are built around.

use crate::model::{Case, Op};
use crate::run::{catching, Stage};

/// Where a panic happened: the first line of its report.
fn panic_site(report: &str) -> &str {
    report.lines().next().unwrap_or("")
}

/// Every program one step simpler than `ops`: an operation removed, or a loop, conditional
/// or thread group replaced by one of its bodies, at any depth.
fn simpler(ops: &[Op]) -> Vec<Vec<Op>> {
    let mut out = vec![];
    for (i, op) in ops.iter().enumerate() {
        let mut v = ops.to_vec();
        v.remove(i);
        out.push(v);
        for (n, body) in op.bodies().into_iter().enumerate() {
            let mut v = ops.to_vec();
            v.splice(i..=i, body.iter().cloned());
            out.push(v);
            for b in simpler(body) {
                let mut v = ops.to_vec();
                *v[i].bodies_mut().swap_remove(n) = b;
                out.push(v);
            }
        }
    }
    out
}

/// Greedily simplifies a case that panics while it still panics at the same place.
fn minimize(mut case: Case, report: &str) -> (Case, String) {
    let site = panic_site(report).to_string();
    let mut report = report.to_string();
    'outer: loop {
        let mut candidates: Vec<Case> = simpler(&case.ops)
            .into_iter()
            .map(|ops| Case {
                ops,
                ..case.clone()
            })
            .collect();
        for i in 0..case.edits.len() {
            let mut c = case.clone();
            c.edits.remove(i);
            candidates.push(c);
        }
        for c in candidates {
            if let Err(r) = catching(&c) {
                if panic_site(&r) == site {
                    (case, report) = (c, r);
                    continue 'outer;
                }
            }
        }
        return (case, report);
    }
}

/// The operations, one a line, bodies indented.
fn describe(ops: &[Op], depth: usize, out: &mut String) {
    for op in ops {
        let pad = "    ".repeat(depth + 1);
        match (op, op.bodies()) {
            (Op::Control(c), bodies) if !bodies.is_empty() => {
                out.push_str(&format!("{pad}Control::{} {{\n", c.head()));
                for (n, body) in bodies.into_iter().enumerate() {
                    if n > 0 {
                        out.push_str(&format!("{pad}}} else {{\n"));
                    }
                    describe(body, depth + 1, out);
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            _ => out.push_str(&format!("{pad}{op:?}\n")),
        }
    }
}

/// A case as text.
pub fn show(case: &Case) -> String {
    let mut s = String::from("ops:\n");
    describe(&case.ops, 0, &mut s);
    s + &format!("consts: {:?}\nedits: {:?}", case.consts, case.edits)
}

/// Runs one case and fails (with the panic and the minimized case) if the library panics.
#[track_caller]
pub fn no_panic(case: Case) -> Stage {
    match catching(&case) {
        Ok(s) => s,
        Err(e) => {
            let (case, e) = minimize(case, &e);
            panic!("the library panicked: {e}\n{}", show(&case))
        }
    }
}
