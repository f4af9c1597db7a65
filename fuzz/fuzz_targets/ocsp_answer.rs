//! OCSP answers as a responder (or anyone on the path to it) may send them.
//!
//! `bridge_runtime::fuzzing::ocsp_answer` checks the input as the answer for a fixed certificate
//! and issuer at a fixed time: DER structure, status, the CertID, the signature by the issuer or
//! a delegated responder certificate, the times; an accepted answer is stapled byte for byte and
//! scheduled. Any input must be refused or accepted, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::ocsp_answer(data);
});
