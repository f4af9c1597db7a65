//! The HTTP/2 wire: the server side of h2 and h2c connections ([`server`]), the client side
//! towards `h2c://` servers and `https://` servers that negotiate `h2` ([`client`]), and what
//! both do with a stream ([`stream`]). Like [`crate::http1`], nothing here knows about routing:
//! policy enters through the `answer` closure of [`server::serve`].

pub(crate) mod client;
pub(crate) mod server;
pub(crate) mod stream;
