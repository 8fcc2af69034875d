//! `DEFINE_PER_CPU(struct rq, runqueues)`: every CPU's runqueue, with a
//! note of which were written.
//!
//! Not in the kernel: the note. The balancer's per-group sums
//! ([`crate::fair::lb::GroupSums`]) are kept between balances and brought
//! up to date only for the CPUs whose runqueue was borrowed mutably since
//! they last read it. Every write to a runqueue goes through
//! [`IndexMut`] here (there is no other mutable access), so no writer can
//! be missed; a borrow that changes nothing the sums read (the clock, the
//! lock's time) costs a recount of one CPU's figures.

use std::ops::{Deref, Index, IndexMut};

use schedlab_topology::CpuSet;

use crate::sched::Rq;

#[derive(Clone, Debug)]
pub struct Runqueues {
    rqs: Vec<Rq>,
    /// CPUs whose runqueue was borrowed mutably since
    /// [`Runqueues::take_written`] last cleared them.
    written: CpuSet,
    /// Whether `written` is kept: not on a machine whose balances never
    /// read the sums (each borrow would pay for a note nobody reads).
    noting: bool,
}

impl Runqueues {
    /// Every CPU starts written: nothing has been summed yet. `noting`:
    /// whether anything will ask which were written.
    pub fn new(rqs: Vec<Rq>, noting: bool) -> Self {
        let written = CpuSet::first_n(rqs.len());
        Runqueues { rqs, written, noting }
    }

    /// Whether writes are noted ([`Runqueues::new`]).
    pub fn noting(&self) -> bool {
        self.noting
    }

    /// The CPUs of `span` (whose words are `words`, [`CpuSet::word_span`])
    /// written since the last call that covered them; forgets them.
    #[inline]
    pub fn take_written(&mut self, span: &CpuSet, words: (usize, usize)) -> CpuSet {
        self.written.take_in(span, words)
    }
}

impl Deref for Runqueues {
    type Target = [Rq];

    #[inline]
    fn deref(&self) -> &[Rq] {
        &self.rqs
    }
}

impl Index<usize> for Runqueues {
    type Output = Rq;

    #[inline]
    fn index(&self, cpu: usize) -> &Rq {
        &self.rqs[cpu]
    }
}

impl IndexMut<usize> for Runqueues {
    #[inline]
    fn index_mut(&mut self, cpu: usize) -> &mut Rq {
        let rq = &mut self.rqs[cpu];
        if self.noting {
            self.written.insert(cpu);
        }
        rq
    }
}

impl<'a> IntoIterator for &'a Runqueues {
    type Item = &'a Rq;
    type IntoIter = std::slice::Iter<'a, Rq>;

    fn into_iter(self) -> Self::IntoIter {
        self.rqs.iter()
    }
}
