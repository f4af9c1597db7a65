//! The body of a gRPC health check's answer, as a probe with `healthCheck.mode: grpc` reads it.
//!
//! `bridge_runtime::fuzzing::grpc_health_answer` takes the bytes as one gRPC message (flag,
//! length, a HealthCheckResponse in Protocol Buffers) and reads its serving status, skipping other
//! fields. Any input must give a status or a refusal, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::grpc_health_answer(data);
});
