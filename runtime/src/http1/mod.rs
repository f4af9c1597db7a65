//! The HTTP/1.1 wire: the server loop that answers plain keep-alive requests itself, the client
//! codec for requests without a body, and the pool of raw upstream connections. Nothing here
//! knows about routers, middlewares or services: policy enters through the `answer` closure of
//! [`server::serve`] and the caller of [`pool`].

pub(crate) mod client;
pub(crate) mod pool;
pub(crate) mod request_body;
pub(crate) mod server;
