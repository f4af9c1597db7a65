//! The request path above the codecs: the field checks every request passes
//! ([`strict`]), the forwarding fields the proxy decides ([`forwarded_headers`]) and request
//! mirroring ([`mirror`]).

pub mod forwarded_headers;
pub mod mirror;
pub mod strict;
