//! The suite's topology against the host it runs on: the model's costs
//! come from a topology file, and one read on another machine describes
//! that machine.

/// A note when the topology is another machine's `--host` reading: its
/// description names the CPU model and kernel it was read on, and this
/// host has another (`cpu_model`: /proc/cpuinfo's, when readable).
pub fn other_machine(description: &str, kernel: &str, cpu_model: Option<&str>) -> Option<String> {
    let (read_model, read_kernel) = schedlab_topology::host::read_on(description)?;
    let mut differs = Vec::new();
    if let Some(m) = cpu_model.filter(|m| *m != read_model) {
        differs.push(format!("CPU {read_model}, this host's {m}"));
    }
    if read_kernel != kernel {
        differs.push(format!("kernel {read_kernel}, this host runs {kernel}"));
    }
    (!differs.is_empty()).then(|| {
        format!(
            "the topology was read on {}: its costs may describe another machine (--probe measures this one)",
            differs.join("; ")
        )
    })
}

/// [`other_machine`] for this host: its kernel `kernel` and the CPU model
/// /proc/cpuinfo names.
pub fn other_machine_here(description: &str, kernel: &str) -> Option<String> {
    let cpu_model = schedlab_topology::host::cpu_model(std::path::Path::new("/"));
    other_machine(description, kernel, Some(cpu_model.as_str()).filter(|m| !m.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::other_machine;

    #[test]
    fn a_host_file_read_on_another_kernel_gets_a_note() {
        let d = "this host: AMD EPYC (2 CPUs, guest), kernel 6.18.44-fc-v1147 (HZ=250, preempt=none), read by schedlab topologies --host";
        assert_eq!(other_machine(d, "6.18.44-fc-v1147", Some("AMD EPYC")), None, "the same machine");
        assert_eq!(other_machine(d, "6.18.44-fc-v1147", None), None, "no cpuinfo: the kernel alone");
        let note = other_machine(d, "6.12.118+deb12-amd64", Some("AMD EPYC")).expect("another kernel");
        assert!(note.contains("read on kernel 6.18.44-fc-v1147, this host runs 6.12.118+deb12-amd64:"), "{note}");
        let note = other_machine(d, "6.18.44-fc-v1147", Some("Intel(R) Xeon(R) Processor")).expect("another CPU");
        assert!(note.contains("read on CPU AMD EPYC, this host's Intel(R) Xeon(R) Processor:"), "{note}");
        let preset = "AMD Ryzen 9 7950X, kernel 6.12 (a preset)";
        assert_eq!(other_machine(preset, "6.18", Some("AMD EPYC")), None, "not a --host file");
    }
}
