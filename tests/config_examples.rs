//! Every shipped example config loads without error (the embedded default included).

use std::path::Path;

#[test]
fn every_example_config_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/ exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            if let Err(e) = rayscope::config::load_file(&path) {
                panic!("{} does not load:\n{e}", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 1, "no example configs found in {}", dir.display());
}

#[test]
fn the_embedded_default_loads() {
    rayscope::config::default_config();
}
