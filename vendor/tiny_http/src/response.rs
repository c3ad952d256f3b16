use crate::common::{HTTPVersion, Header, StatusCode};
use httpdate::HttpDate;
use std::convert::TryFrom;
use std::sync::mpsc::Receiver;

use std::io::Result as IoResult;
use std::io::{self, Cursor, IoSlice, Read, Write};
use std::sync::Arc;

use std::fs::File;

use std::str::FromStr;
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Object representing an HTTP response whose purpose is to be given to a `Request`.
///
/// Some headers cannot be changed. Trying to define the value
/// of one of these will have no effect:
///
///  - `Connection`
///  - `Trailer`
///  - `Transfer-Encoding`
///  - `Upgrade`
///
/// Some headers have special behaviors:
///
///  - `Content-Encoding`: If you define this header, the library
///     will assume that the data from the `Read` object has the specified encoding
///     and will just pass-through.
///
///  - `Content-Length`: The length of the data should be set manually
///     using the `Reponse` object's API. Attempting to set the value of this
///     header will be equivalent to modifying the size of the data but the header
///     itself may not be present in the final result.
///
///  - `Content-Type`: You may only set this header to one value at a time. If you
///     try to set it more than once, the existing value will be overwritten. This
///     behavior differs from the default for most headers, which is to allow them to
///     be set multiple times in the same response.
///
pub struct Response<R> {
    reader: R,
    status_code: StatusCode,
    headers: Vec<Header>,
    /// u64, not usize, on a 32-bit board too: a recording can be over
    /// 4 GiB (an nvr-node patch, as the threshold's type).
    data_length: Option<u64>,
    chunked_threshold: Option<u64>,
    /// A body in memory, shared with other responses, used instead of
    /// `reader` (an nvr-node patch: see `from_shared`).
    shared: Option<Arc<[u8]>>,
}

/// A `Response` without a template parameter.
pub type ResponseBox = Response<Box<dyn Read + Send>>;

/// Transfer encoding to use when sending the message.
/// Note that only *supported* encoding are listed here.
#[derive(Copy, Clone)]
enum TransferEncoding {
    Identity,
    Chunked,
}

/// Writes all of `bufs`, in as few vectored writes as the writer takes.
fn write_all_vectored<W: Write>(writer: &mut W, mut bufs: &mut [IoSlice<'_>]) -> IoResult<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match writer.write_vectored(bufs) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "failed to write the response")),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The largest body sent in one write with its head: a copy in memory of
/// at most this much a response (status with 256 cameras is 92 KB).
const INLINE_BODY_BYTES: usize = 128 * 1024;

/// Appends `Date: <now>` and its CRLF to `head`, the date formatted once a
/// second a thread (an nvr-node patch: upstream formatted it into a new
/// header, four allocations, for every response).
fn write_date_header(head: &mut Vec<u8>) {
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with_borrow_mut(|(at, text)| {
        if *at != second {
            *at = second;
            *text = HttpDate::from(now).to_string();
        }
        head.extend_from_slice(b"Date: ");
        head.extend_from_slice(text.as_bytes());
        head.extend_from_slice(b"\r\n");
    });
}

/// Appends `n` in decimal to `head` (an nvr-node patch: `write!` and
/// `format!` took about a thousand instructions each a response).
fn push_decimal(head: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    head.extend_from_slice(&digits[at..]);
}

/// Appends the status line, `Server` and `Date` unless `headers` has them,
/// `headers`, the framing line (`Content-Length: <length>` or
/// `Transfer-Encoding: chunked`, if any) and the blank line to `head` (an
/// nvr-node patch: upstream wrote each piece through the connection's
/// writer, four locked writes a header, and made the framing line a header
/// of its own, formatted).
fn write_message_header(
    head: &mut Vec<u8>,
    http_version: &HTTPVersion,
    status_code: &StatusCode,
    headers: &[Header],
    framing: Option<Framing>,
) {
    // A version's numbers are single digits (client.rs parses no other).
    head.extend_from_slice(&[
        b'H',
        b'T',
        b'T',
        b'P',
        b'/',
        b'0' + http_version.0,
        b'.',
        b'0' + http_version.1,
        b' ',
    ]);
    push_decimal(head, status_code.0.into());
    head.push(b' ');
    head.extend_from_slice(status_code.default_reason_phrase().as_bytes());
    head.extend_from_slice(b"\r\n");
    if !headers.iter().any(|h| h.field.equiv("Server")) {
        head.extend_from_slice(b"Server: tiny-http (Rust)\r\n");
    }
    if !headers.iter().any(|h| h.field.equiv("Date")) {
        write_date_header(head);
    }
    for header in headers.iter() {
        head.extend_from_slice(header.field.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(header.value.as_str().as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    match framing {
        Some(Framing::Length(length)) => {
            head.extend_from_slice(b"Content-Length: ");
            push_decimal(head, length);
            head.extend_from_slice(b"\r\n");
        }
        Some(Framing::Chunked) => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        None => {}
    }
    head.extend_from_slice(b"\r\n");
}

/// How the head says where the body ends.
#[derive(Copy, Clone)]
enum Framing {
    Length(u64),
    Chunked,
}

/// How the body is sent: by its length, or chunked when that is not known
/// or too large. The request's `TE` is not read: it lists what a client
/// takes besides chunked, and upstream's parsing of its q-values (floats,
/// sorted) took 4 KB of the node for nothing it needs (an nvr-node patch).
fn choose_transfer_encoding(
    status_code: StatusCode,
    http_version: &HTTPVersion,
    entity_length: &Option<u64>,
    has_additional_headers: bool,
    chunked_threshold: u64,
) -> TransferEncoding {
    // HTTP 1.0 doesn't support other encoding
    if *http_version <= (1, 0) {
        return TransferEncoding::Identity;
    }

    // Per section 3.3.1 of RFC7230:
    // A server MUST NOT send a Transfer-Encoding header field in any response with a status code
    // of 1xx (Informational) or 204 (No Content).
    if status_code.0 < 200 || status_code.0 == 204 {
        return TransferEncoding::Identity;
    }

    // if we have additional headers, using chunked
    if has_additional_headers {
        return TransferEncoding::Chunked;
    }

    // if we don't have a Content-Length, or if the Content-Length is too big, using chunks writer
    if entity_length
        .as_ref()
        .map_or(true, |val| *val >= chunked_threshold)
    {
        return TransferEncoding::Chunked;
    }

    // Identity by default
    TransferEncoding::Identity
}

impl<R> Response<R>
where
    R: Read,
{
    /// Creates a new Response object.
    ///
    /// The `additional_headers` argument is a receiver that
    ///  may provide headers even after the response has been sent.
    ///
    /// All the other arguments are straight-forward.
    pub fn new(
        status_code: StatusCode,
        headers: Vec<Header>,
        data: R,
        data_length: Option<u64>,
        additional_headers: Option<Receiver<Header>>,
    ) -> Response<R> {
        let mut response = Response {
            reader: data,
            status_code,
            headers: Vec::with_capacity(16),
            data_length,
            chunked_threshold: None,
            shared: None,
        };

        for h in headers {
            response.add_header(h)
        }

        // dummy implementation
        if let Some(additional_headers) = additional_headers {
            for h in additional_headers.iter() {
                response.add_header(h)
            }
        }

        response
    }

    /// Set a threshold for `Content-Length` where we chose chunked
    /// transfer. Notice that chunked transfer might happen regardless of
    /// this threshold, for instance when the request headers indicate
    /// it is wanted or when there is no `Content-Length`.
    pub fn with_chunked_threshold(mut self, length: u64) -> Response<R> {
        self.chunked_threshold = Some(length);
        self
    }

    /// Convert the response into the underlying `Read` type.
    ///
    /// This is mainly useful for testing as it must consume the `Response`.
    pub fn into_reader(self) -> R {
        self.reader
    }

    /// The current `Content-Length` threshold for switching over to
    /// chunked transfer. The default is 32768 bytes. Notice that
    /// chunked transfer is mutually exclusive with sending a
    /// `Content-Length` header as per the HTTP spec.
    pub fn chunked_threshold(&self) -> u64 {
        self.chunked_threshold.unwrap_or(32768)
    }

    /// Adds a header to the list.
    /// Does all the checks.
    pub fn add_header<H>(&mut self, header: H)
    where
        H: Into<Header>,
    {
        let header = header.into();

        // ignoring forbidden headers
        if header.field.equiv("Connection")
            || header.field.equiv("Trailer")
            || header.field.equiv("Transfer-Encoding")
            || header.field.equiv("Upgrade")
        {
            return;
        }

        // if the header is Content-Length, setting the data length
        if header.field.equiv("Content-Length") {
            if let Ok(val) = u64::from_str(header.value.as_str()) {
                self.data_length = Some(val)
            }

            return;
        // if the header is Content-Type and it's already set, overwrite it
        } else if header.field.equiv("Content-Type") {
            if let Some(content_type_header) = self
                .headers
                .iter_mut()
                .find(|h| h.field.equiv("Content-Type"))
            {
                content_type_header.value = header.value;
                return;
            }
        }

        self.headers.push(header);
    }

    /// Returns the same request, but with an additional header.
    ///
    /// Some headers cannot be modified and some other have a
    ///  special behavior. See the documentation above.
    #[inline]
    pub fn with_header<H>(mut self, header: H) -> Response<R>
    where
        H: Into<Header>,
    {
        self.add_header(header.into());
        self
    }

    /// Returns the same request, but with a different status code.
    #[inline]
    pub fn with_status_code<S>(mut self, code: S) -> Response<R>
    where
        S: Into<StatusCode>,
    {
        self.status_code = code.into();
        self
    }

    /// Returns the same request, but with different data.
    pub fn with_data<S>(self, reader: S, data_length: Option<u64>) -> Response<S>
    where
        S: Read,
    {
        Response {
            reader,
            headers: self.headers,
            status_code: self.status_code,
            data_length,
            chunked_threshold: self.chunked_threshold,
            shared: None,
        }
    }

    /// Prints the HTTP response to a writer.
    ///
    /// This function is the one used to send the response to the client's socket.
    /// Therefore you shouldn't expect anything pretty-printed or even readable.
    ///
    /// The HTTP version passed is used to decide which features (most
    ///  notably, encoding) to use; the request's headers are not (an
    ///  nvr-node patch: see `choose_transfer_encoding`).
    ///
    /// Note: does not flush the writer.
    pub fn raw_print<W: Write>(
        mut self,
        mut writer: W,
        http_version: HTTPVersion,
        _request_headers: &[Header],
        do_not_send_body: bool,
        upgrade: Option<&str>,
    ) -> IoResult<()> {
        let mut transfer_encoding = Some(choose_transfer_encoding(
            self.status_code,
            &http_version,
            &self.data_length,
            false, /* TODO */
            self.chunked_threshold(),
        ));

        // handling upgrade
        if let Some(upgrade) = upgrade {
            self.headers.insert(
                0,
                Header::from_bytes(&b"Upgrade"[..], upgrade.as_bytes()).unwrap(),
            );
            self.headers.insert(
                0,
                Header::from_bytes(&b"Connection"[..], &b"upgrade"[..]).unwrap(),
            );
            transfer_encoding = None;
        }

        // if the transfer encoding is identity, the content length must be known ; therefore if
        // we don't know it, we buffer the entire response first here
        // while this is an expensive operation, it is only ever needed for clients using HTTP 1.0
        // The reader is borrowed, not boxed: a box a response (an nvr-node patch).
        let mut buffered;
        let (reader, data_length): (&mut dyn Read, _) =
            match (self.data_length, transfer_encoding) {
                (Some(l), _) => (&mut self.reader, Some(l)),
                (None, Some(TransferEncoding::Identity)) => {
                    let mut buf = Vec::new();
                    self.reader.read_to_end(&mut buf)?;
                    let l = buf.len() as u64;
                    buffered = Cursor::new(buf);
                    (&mut buffered, Some(l))
                }
                _ => (&mut self.reader, None),
            };

        // checking whether to ignore the body of the response
        let do_not_send_body = do_not_send_body
            || match self.status_code.0 {
                // status code 1xx, 204 and 304 MUST not include a body
                100..=199 | 204 | 304 => true,
                _ => false,
            };

        let framing = match transfer_encoding {
            Some(TransferEncoding::Chunked) => Some(Framing::Chunked),
            // A 304's length would be its representation's, which it does
            // not carry: none (an nvr-node patch; upstream sent 0).
            Some(TransferEncoding::Identity) if self.status_code.0 != 304 => {
                Some(Framing::Length(data_length.expect("identity has a length")))
            }
            _ => None,
        };

        // The head, and a body of known length up to INLINE_BODY_BYTES, leave
        // in one write (an nvr-node patch: upstream wrote the head, then the
        // body through an 8 KiB buffer, two or three sends for 20 KB).
        let mut head = Vec::with_capacity(256);
        write_message_header(&mut head, &http_version, &self.status_code, &self.headers, framing);
        let send_body = !do_not_send_body && transfer_encoding.is_some();
        let identity = matches!(transfer_encoding, Some(TransferEncoding::Identity));
        let mut shared_reader;
        let reader: &mut dyn Read = match self.shared.take() {
            Some(bytes) if send_body && identity => {
                return write_all_vectored(&mut writer, &mut [IoSlice::new(&head), IoSlice::new(&bytes)]);
            }
            Some(bytes) => {
                shared_reader = Cursor::new(bytes);
                &mut shared_reader
            }
            None => reader,
        };
        let inline = data_length
            .and_then(|l| usize::try_from(l).ok())
            .filter(|&l| l <= INLINE_BODY_BYTES);
        if let Some(length) = inline.filter(|_| send_body && identity) {
            head.reserve_exact(length);
            reader.take(length as u64).read_to_end(&mut head)?;
            return writer.write_all(&head);
        }
        writer.write_all(&head)?;

        // sending the body
        if send_body {
            match transfer_encoding {
                Some(TransferEncoding::Chunked) => {
                    use chunked_transfer::Encoder;

                    let mut writer = Encoder::new(writer);
                    io::copy(reader, &mut writer)?;
                }

                // No more than the Content-Length said, whatever the
                // reader holds: more would be taken for the next response
                // (an nvr-node patch).
                Some(TransferEncoding::Identity) => {
                    if let Some(l) = data_length.filter(|&l| l >= 1) {
                        io::copy(&mut reader.take(l), &mut writer)?;
                    }
                }

                _ => (),
            }
        }

        Ok(())
    }

    /// Retrieves the current value of the `Response` status code
    pub fn status_code(&self) -> StatusCode {
        self.status_code
    }

    /// Retrieves the current value of the `Response` data length
    pub fn data_length(&self) -> Option<u64> {
        self.data_length
    }

    /// Retrieves the current list of `Response` headers
    pub fn headers(&self) -> &[Header] {
        &self.headers
    }
}

impl<R> Response<R>
where
    R: Read + Send + 'static,
{
    /// Turns this response into a `Response<Box<Read + Send>>`.
    pub fn boxed(self) -> ResponseBox {
        Response {
            reader: Box::new(self.reader) as Box<dyn Read + Send>,
            status_code: self.status_code,
            headers: self.headers,
            data_length: self.data_length,
            chunked_threshold: self.chunked_threshold,
            shared: self.shared,
        }
    }
}

impl Response<File> {
    /// Builds a new `Response` from a `File`.
    ///
    /// The `Content-Type` will **not** be automatically detected,
    ///  you must set it yourself.
    pub fn from_file(file: File) -> Response<File> {
        let file_size = file.metadata().ok().map(|v| v.len());

        Response::new(
            StatusCode(200),
            Vec::with_capacity(0),
            file,
            file_size,
            None,
        )
    }
}

impl Response<Cursor<Vec<u8>>> {
    pub fn from_data<D>(data: D) -> Response<Cursor<Vec<u8>>>
    where
        D: Into<Vec<u8>>,
    {
        let data = data.into();
        let data_len = data.len() as u64;

        Response::new(
            StatusCode(200),
            Vec::with_capacity(0),
            Cursor::new(data),
            Some(data_len),
            None,
        )
    }

    pub fn from_string<S>(data: S) -> Response<Cursor<Vec<u8>>>
    where
        S: Into<String>,
    {
        let data = data.into();
        let data_len = data.len() as u64;

        Response::new(
            StatusCode(200),
            vec![
                Header::from_bytes(&b"Content-Type"[..], &b"text/plain; charset=UTF-8"[..])
                    .unwrap(),
            ],
            Cursor::new(data.into_bytes()),
            Some(data_len),
            None,
        )
    }
}

impl Response<io::Empty> {
    /// Builds an empty `Response` with the given status code.
    pub fn empty<S>(status_code: S) -> Response<io::Empty>
    where
        S: Into<StatusCode>,
    {
        Response::new(
            status_code.into(),
            Vec::with_capacity(0),
            io::empty(),
            Some(0),
            None,
        )
    }

    /// A response whose body is `bytes`, kept in memory and shared with
    /// other responses: sent with the head in one vectored write, without being
    /// copied (an nvr-node patch, for the status body).
    pub fn from_shared(
        status_code: StatusCode,
        headers: Vec<Header>,
        bytes: Arc<[u8]>,
    ) -> Response<io::Empty> {
        let length = bytes.len() as u64;
        let mut response = Response::new(status_code, headers, io::empty(), Some(length), None);
        response.shared = Some(bytes);
        response
    }

    /// DEPRECATED. Use `empty` instead.
    pub fn new_empty(status_code: StatusCode) -> Response<io::Empty> {
        Response::empty(status_code)
    }
}

impl Clone for Response<io::Empty> {
    fn clone(&self) -> Response<io::Empty> {
        Response {
            reader: io::empty(),
            status_code: self.status_code,
            headers: self.headers.clone(),
            data_length: self.data_length,
            chunked_threshold: self.chunked_threshold,
            shared: self.shared.clone(),
        }
    }
}
