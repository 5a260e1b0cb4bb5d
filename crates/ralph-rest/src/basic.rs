//! HTTP Basic authorization, for git's push over HTTPS: the token goes in a header given to
//! that one git command, never into `.git/config` or the remote's URL.

/// The `Authorization: Basic ...` header line for `user` and `password`.
#[must_use]
pub fn basic_authorization(user: &str, password: &str) -> String {
    format!(
        "Authorization: Basic {}",
        base64(format!("{user}:{password}").as_bytes())
    )
}

/// Standard base64 with padding (RFC 4648), for the one header that needs it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"x-access-token:t"), "eC1hY2Nlc3MtdG9rZW46dA==");
    }

    #[test]
    fn the_header_holds_the_user_and_password() {
        assert_eq!(
            basic_authorization("oauth2", "t"),
            "Authorization: Basic b2F1dGgyOnQ="
        );
    }
}
