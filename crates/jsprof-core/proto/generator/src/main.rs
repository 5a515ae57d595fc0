//! Compiles the vendored OpenTelemetry profiles protos with protox (a protobuf compiler in Rust, so no
//! protoc is needed) and writes prost's message types into `src/export/otlp/proto/`. Comments are left
//! out of the generated code (the .proto files keep them, and rustdoc would run their indented
//! examples as doctests).
use std::path::Path;

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let protos = here.parent().expect("proto dir");
    let out = protos.parent().expect("crate dir").join("src/export/otlp/proto");
    std::fs::create_dir_all(&out).expect("create the output folder");
    let files = ["opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"];
    let descriptors = protox::compile(files, [protos]).expect("compile the protos");
    let mut config = prost_build::Config::new();
    config.out_dir(&out).disable_comments(["."]);
    config.compile_fds(descriptors).expect("generate the Rust types");
    println!("wrote {}", out.display());
}
