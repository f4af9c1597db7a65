//! What a failed exchange with a server says about that server (for passive health), and
//! whether the client gets 504 (a timeout) or 502. By error type, never by message text. A
//! failure of the client's own request body (it went away mid-upload, sent a broken chunk, or
//! was slower than `readTimeout`) says nothing about the server: [`client_side`].

use crate::body::BoxError;
use crate::deadline::BodyTimedOut;
use crate::transport::SendError;
use crate::upstream::FailureKind;

/// Reading the client's request body failed while it was being sent upstream.
#[derive(Debug, thiserror::Error)]
#[error("client request body: {0}")]
pub(crate) struct ClientBodyError(#[source] pub(crate) BoxError);

/// True when `e` came from the client's request body (its error, or the read deadline), not
/// from the server: a slow or vanishing client must not mark a healthy server down.
pub(crate) fn client_side(e: &(dyn std::error::Error + 'static)) -> bool {
    in_chain(e, |err| {
        err.is::<ClientBodyError>() || err.is::<BodyTimedOut>()
    })
}

/// True when a failed exchange says nothing about its server: the client's body failed, or the
/// request was one the server's protocol cannot carry (an `Upgrade` to an HTTP/2 server). Such a
/// failure is the client's 502, never a passive-health mark against the server.
pub(crate) fn not_the_servers(e: &SendError) -> bool {
    matches!(e, SendError::H2(crate::http2::client::H2Error::Upgrade)) || client_side(e)
}

/// The failure kind of `e`, and whether it was a timeout.
pub(crate) fn classify(e: &SendError) -> (FailureKind, bool) {
    let (connect, timed_out) = match e {
        SendError::Client(e) => (
            e.is_connect(),
            error_chain_has(e, std::io::ErrorKind::TimedOut),
        ),
        SendError::Pool(e) => (e.is_connect(), e.is_timeout()),
        SendError::H2(e) => (e.is_connect(), e.is_timeout()),
        SendError::HeaderTimeout(_) => return (FailureKind::Timeout, true),
        SendError::NoClient => return (FailureKind::ConnectRefused, false),
    };
    let kind = match (connect, timed_out) {
        (true, true) => FailureKind::Timeout,
        (true, false) => FailureKind::ConnectRefused,
        (false, _) => FailureKind::Reset,
    };
    (kind, timed_out)
}

/// True when `e` or one of its sources is an I/O error of `kind`.
fn error_chain_has(e: &(dyn std::error::Error + 'static), kind: std::io::ErrorKind) -> bool {
    in_chain(e, |err| {
        err.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

/// True when `e` or one of its sources satisfies `test`.
fn in_chain(
    e: &(dyn std::error::Error + 'static),
    test: impl Fn(&(dyn std::error::Error + 'static)) -> bool,
) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if test(err) {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(std::io::Error);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("connect error")
        }
    }

    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_timed_out_io_error_anywhere_in_the_chain_is_a_timeout() {
        let e = Wrapper(std::io::Error::new(std::io::ErrorKind::TimedOut, "dial"));
        assert!(error_chain_has(&e, std::io::ErrorKind::TimedOut));
        let e = Wrapper(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "dial",
        ));
        assert!(!error_chain_has(&e, std::io::ErrorKind::TimedOut));
    }

    #[test]
    fn a_failure_of_the_client_body_or_its_read_deadline_is_the_clients() {
        let body = Wrapper2(Box::new(ClientBodyError(Box::new(std::io::Error::other(
            "reset",
        )))));
        assert!(client_side(&body));
        let slow = Wrapper2(Box::new(BodyTimedOut("read")));
        assert!(client_side(&slow));
        let server = Wrapper(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "server",
        ));
        assert!(!client_side(&server));
        assert!(!client_side(&SendError::NoClient));
    }

    /// An error whose source is a boxed error, as hyper reports a body's failure.
    #[derive(Debug)]
    struct Wrapper2(BoxError);

    impl std::fmt::Display for Wrapper2 {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error from user's Body stream")
        }
    }

    impl std::error::Error for Wrapper2 {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn an_upgrade_an_http2_server_cannot_carry_is_not_held_against_it() {
        use crate::http2::client::H2Error;
        assert!(not_the_servers(&SendError::H2(H2Error::Upgrade)));
        assert!(!not_the_servers(&SendError::H2(H2Error::ConnectTimeout)));
        assert!(!not_the_servers(&SendError::NoClient));
    }

    #[test]
    fn a_header_timeout_is_a_504_and_a_missing_client_a_refusal() {
        assert_eq!(
            classify(&SendError::HeaderTimeout(100)),
            (FailureKind::Timeout, true)
        );
        assert_eq!(
            classify(&SendError::NoClient),
            (FailureKind::ConnectRefused, false)
        );
    }
}
