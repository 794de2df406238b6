//! A script whose body is a plain function, for scripts written inline in a test. Its grid is
//! one block unless the body sets another (scripts must say how many blocks they launch; the
//! inline scripts of the tests are about other rules).

use std::fmt;
use std::hash::{Hash, Hasher};
use tilus::lang::ArgList;
use tilus::prelude::*;

/// A script whose body is `self.0`; `A` is its argument list.
pub struct Body<A: ArgList>(pub fn(&mut Kernel, Handles<A>));

impl<A: ArgList> Clone for Body<A> {
    fn clone(&self) -> Self {
        Body(self.0)
    }
}

impl<A: ArgList> fmt::Debug for Body<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Body")
    }
}

impl<A: ArgList> Hash for Body<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0 as usize).hash(state)
    }
}

impl<A: ArgList + 'static> Script for Body<A> {
    type Args = A;
    fn body(&self, k: &mut Kernel, args: Handles<A>) {
        k.blocks([1]);
        (self.0)(k, args)
    }
}
