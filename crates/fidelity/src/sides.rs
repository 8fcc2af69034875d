//! The model's and the host's analyses, which live in `schedlab_sides`
//! now (one API for every side); named here too so that code written
//! against `schedlab_fidelity::sides` keeps building.

pub use schedlab_sides::{analyze_kept, analyze_real, analyze_sim, sim_workload, simulate_analyzed, SimSide};
