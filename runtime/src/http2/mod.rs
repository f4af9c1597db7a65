//! The HTTP/2 wire: the server side of h2 and h2c connections (the client side is hyper's, in
//! [`crate::transport`]). Like [`crate::http1`], nothing here knows about routing: policy
//! enters through the `answer` closure of [`server::serve`].

pub(crate) mod server;
