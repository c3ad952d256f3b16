//! Web Push's cryptography: a message encrypted for one browser's
//! subscription (RFC 8291, `aes128gcm` of RFC 8188, one record) and the
//! node's VAPID signature that push services check (RFC 8292, ES256). All of
//! it is *ring*'s, which the node links for TLS already.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{self, ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

/// A P-256 public key, uncompressed: 0x04, then x and y.
pub const PUBLIC_KEY_BYTES: usize = 65;
/// A subscription's authentication secret.
pub const AUTH_BYTES: usize = 16;
/// The one record's size: the whole message fits in it. Push services take
/// at least 4096 bytes of body, of which the header takes 86.
const RECORD_SIZE: u32 = 4096;
const HEADER_BYTES: usize = 16 + 4 + 1 + PUBLIC_KEY_BYTES;
const TAG_BYTES: usize = 16;
/// The most plaintext one message carries: the record less its tag and the
/// delimiter, and the body within 4096 bytes with its header.
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - HEADER_BYTES - TAG_BYTES - 1;
/// How long a VAPID token is good for (RFC 8292 allows at most 24 hours).
const TOKEN_SECONDS: u64 = 12 * 3600;

/// Text in base64url without padding (browsers give keys so; some pad).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

pub fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `plaintext` encrypted for the browser whose subscription has the public
/// key `ua_public` and secret `auth`, with a key pair and salt made for it.
/// None: the key is not a point on P-256, or the text is too long.
pub fn encrypt(plaintext: &[u8], ua_public: &[u8], auth: &[u8]) -> Option<Vec<u8>> {
    if plaintext.len() > MAX_PLAINTEXT {
        return None;
    }
    let random = SystemRandom::new();
    let mut salt = [0u8; 16];
    random.fill(&mut salt).ok()?;
    let private = EphemeralPrivateKey::generate(&ECDH_P256, &random).ok()?;
    let as_public = private.compute_public_key().ok()?;
    let peer = UnparsedPublicKey::new(&ECDH_P256, ua_public);
    agreement::agree_ephemeral(private, &peer, |secret| {
        seal(
            secret,
            ua_public,
            as_public.as_ref(),
            auth,
            &salt,
            plaintext,
        )
    })
    .ok()
}

/// RFC 8291, section 3.4, from the shared ECDH secret on: the body sent.
fn seal(
    ecdh_secret: &[u8],
    ua_public: &[u8],
    as_public: &[u8],
    auth: &[u8],
    salt: &[u8; 16],
    plaintext: &[u8],
) -> Vec<u8> {
    let key_info = [b"WebPush: info\0".as_slice(), ua_public, as_public].concat();
    let mut ikm = [0u8; 32];
    expand(
        &Salt::new(HKDF_SHA256, auth).extract(ecdh_secret),
        &key_info,
        &mut ikm,
    );
    let prk = Salt::new(HKDF_SHA256, salt).extract(&ikm);
    let mut cek = [0u8; 16];
    expand(&prk, b"Content-Encoding: aes128gcm\0", &mut cek);
    let mut nonce = [0u8; 12];
    expand(&prk, b"Content-Encoding: nonce\0", &mut nonce);
    let mut body = Vec::with_capacity(HEADER_BYTES + plaintext.len() + 1 + TAG_BYTES);
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(as_public);
    let mut record = [plaintext, &[2]].concat();
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).expect("16 bytes"));
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::empty(),
        &mut record,
    )
    .expect("a record within AES-GCM's limits");
    body.extend_from_slice(&record);
    body
}

/// HKDF-Expand of `prk` with `info` into `out`.
fn expand(prk: &ring::hkdf::Prk, info: &[u8], out: &mut [u8]) {
    struct Len(usize);
    impl KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    prk.expand(&[info], Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF output within 255 hashes");
}

/// The node's VAPID key pair: it signs the token each push carries, and
/// browsers subscribe with its public key.
pub struct Vapid {
    pair: EcdsaKeyPair,
}

impl Vapid {
    /// A new key pair, as PKCS#8 (what the database keeps).
    pub fn generate() -> Vec<u8> {
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("the system's random numbers")
            .as_ref()
            .to_vec()
    }

    pub fn from_pkcs8(pkcs8: &[u8]) -> Option<Vapid> {
        EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8,
            &SystemRandom::new(),
        )
        .ok()
        .map(|pair| Vapid { pair })
    }

    /// The public key in base64url: a subscription's `applicationServerKey`.
    pub fn public_key(&self) -> String {
        encode(self.pair.public_key().as_ref())
    }

    /// The `Authorization` header for a push to `audience` (the endpoint's
    /// origin), good for 12 hours from `now_s` (seconds since the epoch).
    pub fn authorization(&self, audience: &str, subject: &str, now_s: u64) -> String {
        let header = encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": audience,
            "exp": now_s + TOKEN_SECONDS,
            "sub": subject,
        });
        let signed = format!("{header}.{}", encode(claims.to_string().as_bytes()));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .expect("the system's random numbers");
        format!(
            "vapid t={signed}.{}, k={}",
            encode(signature.as_ref()),
            self.public_key()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey as Verifier};

    fn b(text: &str) -> Vec<u8> {
        decode(text).unwrap()
    }

    /// RFC 8291, Appendix A: the body from the shared secret the example's
    /// two keys agree on (*ring* makes its own key pairs only).
    #[test]
    fn the_rfc_8291_example_encrypts_to_its_body() {
        let salt: [u8; 16] = b("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = seal(
            &b("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"),
            &b(
                "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            ),
            &b(
                "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
            ),
            &b("BTBZMqHH6r4Tts7J_aSIgg"),
            &salt,
            b"When I grow up, I want to be a watermelon",
        );
        assert_eq!(
            encode(&body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    /// A browser's side: the shared secret from its own private key and
    /// the sender's public key in the header, then the same derivation.
    #[test]
    fn a_browser_decrypts_what_is_encrypted_for_it() {
        let random = SystemRandom::new();
        let browser = EphemeralPrivateKey::generate(&ECDH_P256, &random).unwrap();
        let ua_public = browser.compute_public_key().unwrap().as_ref().to_vec();
        let auth = [7u8; AUTH_BYTES];
        let text = br#"{"title":"Person at Front door"}"#;
        let body = encrypt(text, &ua_public, &auth).unwrap();
        assert_eq!(&body[16..20], &RECORD_SIZE.to_be_bytes());
        assert_eq!(body[20] as usize, PUBLIC_KEY_BYTES);
        let salt: [u8; 16] = body[..16].try_into().unwrap();
        let as_public = body[21..HEADER_BYTES].to_vec();
        let peer = UnparsedPublicKey::new(&ECDH_P256, &as_public);
        let resealed = agreement::agree_ephemeral(browser, &peer, |secret| {
            seal(secret, &ua_public, &as_public, &auth, &salt, text)
        })
        .unwrap();
        assert_eq!(resealed, body, "both sides derive the same key and nonce");

        assert!(encrypt(&[b'x'; MAX_PLAINTEXT], &ua_public, &auth).is_some());
        let too_long = encrypt(&[b'x'; MAX_PLAINTEXT + 1], &ua_public, &auth);
        assert!(too_long.is_none());
        assert!(
            encrypt(text, &[4; PUBLIC_KEY_BYTES], &auth).is_none(),
            "not a point"
        );
    }

    #[test]
    fn the_vapid_token_is_an_es256_jwt_for_the_audience() {
        let vapid = Vapid::from_pkcs8(&Vapid::generate()).unwrap();
        let header = vapid.authorization("https://push.example.net", "mailto:a@b.c", 1_000);
        let (token, key) = header
            .strip_prefix("vapid t=")
            .and_then(|rest| rest.split_once(", k="))
            .unwrap();
        assert_eq!(key, vapid.public_key());
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value = serde_json::from_slice(&b(parts[1])).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://push.example.net", "exp": 1_000 + 12 * 3600, "sub": "mailto:a@b.c"})
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        Verifier::new(&ECDSA_P256_SHA256_FIXED, b(key))
            .verify(signed.as_bytes(), &b(parts[2]))
            .expect("signed by the key it names");
        assert!(Vapid::from_pkcs8(b"not a key").is_none());
    }
}
