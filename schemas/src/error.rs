//! Errors of sealing, writing and loading a plan.

/// Why a plan could not be sealed, written or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The bytes are not UTF-8 JSON (or not a JSON object, or nest too deeply to parse).
    #[error("the plan is not valid JSON: {0}")]
    NotJson(String),
    /// `plan_version` names a format this build does not know.
    #[error(
        "plan_version {found} is not supported (this build reads plan_version {supported}): rebuild the plan with the bridgectl of this release (`bridgectl build`)"
    )]
    UnsupportedVersion {
        /// The version found in the plan.
        found: u64,
        /// The version this build supports ([`crate::PLAN_VERSION`]).
        supported: u32,
    },
    /// The content does not hash to the recorded `hash`: the file was edited or damaged.
    #[error("plan hash mismatch: the plan records {expected} but its content hashes to {actual}")]
    HashMismatch {
        /// The hash recorded in the plan's `hash` field.
        expected: String,
        /// The hash computed from the plan's content.
        actual: String,
    },
    /// A number is not an integer (plans hold integers only).
    #[error("non-integer number at {pointer}: plans hold integers only")]
    NotInteger {
        /// JSON Pointer (RFC 6901) of the number.
        pointer: String,
    },
    /// The value nests deeper than the canonical form allows.
    #[error("the value nests deeper than {max} levels at {pointer}")]
    TooDeep {
        /// JSON Pointer (RFC 6901) of the first value too deep.
        pointer: String,
        /// Deepest nesting allowed ([`crate::canonical::MAX_DEPTH`]).
        max: usize,
    },
    /// The JSON does not have the shape of a plan (missing or unknown field, wrong type, duplicate
    /// key); the message gives the line and column when known.
    #[error("invalid plan: {0}")]
    Invalid(String),
    /// The plan is well-formed but refers to something it does not define, or breaks an ordering
    /// rule (see [`crate::Plan::check_consistency`]).
    #[error("inconsistent plan at {pointer}: {message}")]
    Inconsistent {
        /// JSON Pointer (RFC 6901) of the offending value.
        pointer: String,
        /// What is wrong.
        message: String,
    },
}
