//! Content sniffing as Go's `http.DetectContentType` does it, byte for byte.
//!
//! Traefik's compress middleware decides whether to compress a response by its `Content-Type`;
//! when the backend sent none, the gzip path sniffs the first bytes of the body with Go's sniffer
//! and matches the include/exclude lists against that. The sniffed type only steers that decision:
//! it is never written into the response. To decide as Traefik does, [`detect`] reproduces Go's
//! table (the WHATWG MIME Sniffing signatures as Go ships them, Go 1.19 through today) in Go's
//! order, with Go's quirks, rather than a "better" sniffer.

/// Go looks at no more than this many leading bytes.
const SNIFF_LEN: usize = 512;

const HTML: &str = "text/html; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// What Go answers when no signature matched and the bytes did not look like text.
const OCTET_STREAM: &str = "application/octet-stream";

/// One row of the signature table. Rows are tried in order and the first that matches wins, so
/// overlaps (an icon header that also has `LP` at byte 34, say) resolve as Go resolves them.
#[derive(Debug)]
enum Sig {
    /// A tag opener, looked for after leading whitespace. ASCII letters match either case; the
    /// byte after it must exist and be a space or `>`, so `<p>` counts and `<pre>` does not.
    Html(&'static [u8]),
    /// `data[i] & mask[i] == pat[i]` over the whole pattern: zero mask bytes are "any byte". Only
    /// `<?xml` skips leading whitespace; every other row anchors at byte 0.
    Masked {
        mask: &'static [u8],
        pat: &'static [u8],
        skip_ws: bool,
        ct: &'static str,
    },
    /// A plain prefix at byte 0. Go spells some of these as masked rows whose mask is all 0xFF,
    /// which is the same test.
    Exact(&'static [u8], &'static str),
    /// An ISO BMFF `ftyp` box naming an `mp4*` brand.
    Mp4,
    /// The last resort: no binary control byte after the leading whitespace.
    Text,
}

/// A RIFF container: "RIFF", four bytes of length (any), then the form type.
const RIFF_MASK: &[u8] = b"\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF";
/// WebP also pins the first two bytes of the first chunk's tag ("VP8 ", "VP8L", "VP8X").
const RIFF_MASK_VP: &[u8] = b"\xFF\xFF\xFF\xFF\x00\x00\x00\x00\xFF\xFF\xFF\xFF\xFF\xFF";
/// A BOM is recognised only with at least four bytes present, though two or three decide it:
/// shorter data falls through to the text check.
const BOM16_MASK: &[u8] = b"\xFF\xFF\x00\x00";
const BOM8_MASK: &[u8] = b"\xFF\xFF\xFF\x00";

/// Embedded OpenType (EOT) carries its magic "LP" at bytes 34–35, after a header of sizes and
/// flags; anything at all may come before it, which is why text with "LP" there is a "font".
const EOT_MAGIC_AT: usize = 34;
const EOT_MASK: [u8; EOT_MAGIC_AT + 2] = {
    let mut mask = [0; EOT_MAGIC_AT + 2];
    mask[EOT_MAGIC_AT] = 0xFF;
    mask[EOT_MAGIC_AT + 1] = 0xFF;
    mask
};
const EOT_PAT: [u8; EOT_MAGIC_AT + 2] = {
    let mut pat = [0; EOT_MAGIC_AT + 2];
    pat[EOT_MAGIC_AT] = b'L';
    pat[EOT_MAGIC_AT + 1] = b'P';
    pat
};

/// Go's table, in Go's order. Modern Go no longer has the `.snd` (audio/basic) row of older
/// releases, and names icons `image/x-icon` rather than `image/vnd.microsoft.icon`.
const SIGNATURES: &[Sig] = &[
    Sig::Html(b"<!DOCTYPE HTML"),
    Sig::Html(b"<HTML"),
    Sig::Html(b"<HEAD"),
    Sig::Html(b"<SCRIPT"),
    Sig::Html(b"<IFRAME"),
    Sig::Html(b"<H1"),
    Sig::Html(b"<DIV"),
    Sig::Html(b"<FONT"),
    Sig::Html(b"<TABLE"),
    Sig::Html(b"<A"),
    Sig::Html(b"<STYLE"),
    Sig::Html(b"<TITLE"),
    Sig::Html(b"<B"),
    Sig::Html(b"<BODY"),
    Sig::Html(b"<BR"),
    Sig::Html(b"<P"),
    Sig::Html(b"<!--"),
    // Case-sensitive and with no terminator rule, unlike the HTML rows.
    Sig::Masked {
        mask: b"\xFF\xFF\xFF\xFF\xFF",
        pat: b"<?xml",
        skip_ws: true,
        ct: "text/xml; charset=utf-8",
    },
    Sig::Exact(b"%PDF-", "application/pdf"),
    Sig::Exact(b"%!PS-Adobe-", "application/postscript"),
    // Byte-order marks. The UTF-8 row answers the same as the text row would, but it comes first,
    // so a BOM followed by a NUL is still text.
    Sig::Masked {
        mask: BOM16_MASK,
        pat: b"\xFE\xFF\x00\x00",
        skip_ws: false,
        ct: "text/plain; charset=utf-16be",
    },
    Sig::Masked {
        mask: BOM16_MASK,
        pat: b"\xFF\xFE\x00\x00",
        skip_ws: false,
        ct: "text/plain; charset=utf-16le",
    },
    Sig::Masked {
        mask: BOM8_MASK,
        pat: b"\xEF\xBB\xBF\x00",
        skip_ws: false,
        ct: TEXT,
    },
    // Images.
    Sig::Exact(b"\x00\x00\x01\x00", "image/x-icon"),
    Sig::Exact(b"\x00\x00\x02\x00", "image/x-icon"), // cursor
    Sig::Exact(b"BM", "image/bmp"),
    Sig::Exact(b"GIF87a", "image/gif"),
    Sig::Exact(b"GIF89a", "image/gif"),
    Sig::Masked {
        mask: RIFF_MASK_VP,
        pat: b"RIFF\x00\x00\x00\x00WEBPVP",
        skip_ws: false,
        ct: "image/webp",
    },
    Sig::Exact(b"\x89PNG\r\n\x1A\n", "image/png"),
    Sig::Exact(b"\xFF\xD8\xFF", "image/jpeg"),
    // Audio and video, in the order the standard prescribes.
    Sig::Masked {
        mask: RIFF_MASK,
        pat: b"FORM\x00\x00\x00\x00AIFF",
        skip_ws: false,
        ct: "audio/aiff",
    },
    Sig::Exact(b"ID3", "audio/mpeg"),
    Sig::Exact(b"OggS\x00", "application/ogg"),
    Sig::Exact(b"MThd\x00\x00\x00\x06", "audio/midi"),
    Sig::Masked {
        mask: RIFF_MASK,
        pat: b"RIFF\x00\x00\x00\x00AVI ",
        skip_ws: false,
        ct: "video/avi",
    },
    Sig::Masked {
        mask: RIFF_MASK,
        pat: b"RIFF\x00\x00\x00\x00WAVE",
        skip_ws: false,
        ct: "audio/wave",
    },
    Sig::Mp4,
    Sig::Exact(b"\x1A\x45\xDF\xA3", "video/webm"),
    // Fonts.
    Sig::Masked {
        mask: &EOT_MASK,
        pat: &EOT_PAT,
        skip_ws: false,
        ct: "application/vnd.ms-fontobject",
    },
    Sig::Exact(b"\x00\x01\x00\x00", "font/ttf"),
    Sig::Exact(b"OTTO", "font/otf"),
    Sig::Exact(b"ttcf", "font/collection"),
    Sig::Exact(b"wOFF", "font/woff"),
    Sig::Exact(b"wOF2", "font/woff2"),
    // Archives. RAR follows RAR Labs' magic ("Rar!"), not the standard's, as Go does.
    Sig::Exact(b"\x1F\x8B\x08", "application/x-gzip"),
    Sig::Exact(b"PK\x03\x04", "application/zip"),
    Sig::Exact(b"Rar!\x1A\x07\x00", "application/x-rar-compressed"), // v1.5 to v4
    Sig::Exact(b"Rar!\x1A\x07\x01\x00", "application/x-rar-compressed"), // v5
    Sig::Exact(b"\x00asm", "application/wasm"),
    Sig::Text,
];

// A masked row whose mask and pattern differ in length could never match in Go; here it would be
// a typo, so refuse to build rather than silently drop a signature. Text must close the table, as
// every byte string it accepts would otherwise shadow the rows after it.
const _: () = {
    let mut i = 0;
    while i < SIGNATURES.len() {
        if let Sig::Masked { mask, pat, .. } = &SIGNATURES[i] {
            assert!(mask.len() == pat.len());
        }
        assert!(matches!(SIGNATURES[i], Sig::Text) == (i + 1 == SIGNATURES.len()));
        i += 1;
    }
};

/// The media type Go's `http.DetectContentType` gives `data` (only its first 512 bytes count).
pub(crate) fn detect(data: &[u8]) -> &'static str {
    let data = data.get(..SNIFF_LEN).unwrap_or(data);
    // `is_ascii_whitespace` is exactly the standard's whitespace set (tab, LF, FF, CR, space):
    // vertical tab is not in it, and is a binary byte below.
    let trimmed = data.trim_ascii_start();
    SIGNATURES
        .iter()
        .find_map(|sig| sig.matches(data, trimmed))
        .unwrap_or(OCTET_STREAM)
}

impl Sig {
    fn matches(&self, data: &[u8], trimmed: &[u8]) -> Option<&'static str> {
        match *self {
            Self::Html(tag) => html_tag(tag, trimmed).then_some(HTML),
            Self::Masked {
                mask,
                pat,
                skip_ws,
                ct,
            } => {
                let data = if skip_ws { trimmed } else { data };
                (data.len() >= pat.len()
                    && data
                        .iter()
                        .zip(mask)
                        .zip(pat)
                        .all(|((&d, &m), &p)| d & m == p))
                .then_some(ct)
            }
            Self::Exact(prefix, ct) => data.starts_with(prefix).then_some(ct),
            Self::Mp4 => is_mp4(data).then_some("video/mp4"),
            Self::Text => (!trimmed.iter().any(|&b| is_binary(b))).then_some(TEXT),
        }
    }
}

fn html_tag(tag: &[u8], trimmed: &[u8]) -> bool {
    let Some((head, rest)) = trimmed.split_at_checked(tag.len()) else {
        return false;
    };
    // Clearing bit 5 folds a lowercase ASCII letter onto its capital; only the tag's letters are
    // folded, so `<!--`, `<H1` and the space in `<!DOCTYPE HTML` compare exactly.
    let same = tag.iter().zip(head).all(|(&t, &d)| {
        if t.is_ascii_uppercase() {
            d & 0xDF == t
        } else {
            d == t
        }
    });
    same && matches!(rest.first(), Some(b' ' | b'>'))
}

/// The standard's MP4 rule: the data opens with an `ftyp` box that fits in what was read, and its
/// major brand or one of its compatible brands starts with "mp4". Bytes 12–15 are the minor
/// version, not a brand, and are skipped.
fn is_mp4(data: &[u8]) -> bool {
    if data.len() < 12 {
        return false;
    }
    let Some(&size) = data.first_chunk::<4>() else {
        return false;
    };
    // A size that does not fit a usize cannot fit in the data either.
    let Ok(box_size) = usize::try_from(u32::from_be_bytes(size)) else {
        return false;
    };
    if data.len() < box_size || box_size % 4 != 0 || data.get(4..8) != Some(b"ftyp") {
        return false;
    }
    // A box under 12 bytes holds no brand, so there is nothing to find, as in Go.
    let Some(brands) = data.get(8..box_size) else {
        return false;
    };
    brands
        .chunks_exact(4)
        .enumerate()
        .any(|(i, brand)| i != 1 && brand.starts_with(b"mp4"))
}

/// Control bytes that mark data as binary. Tab, LF, FF, CR and ESC are text; so is every byte
/// from 0x20 up, including DEL and anything that is not valid UTF-8 (Go does not check UTF-8).
fn is_binary(b: u8) -> bool {
    matches!(b, 0x00..=0x08 | 0x0B | 0x0E..=0x1A | 0x1C..=0x1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = "text/xml; charset=utf-8";

    /// Description, input, what Go answers (checked against go1.19.8, whose sniffer is today's).
    const CASES: &[(&str, &[u8], &str)] = &[
        // Nothing much.
        ("empty", b"", TEXT),
        ("only whitespace", b" \t\r\n\x0c", TEXT),
        ("a few binary bytes", b"\x01\x02\x03", OCTET_STREAM),
        (
            "plain text",
            "This is not HTML. It has ☃ though.".as_bytes(),
            TEXT,
        ),
        ("invalid UTF-8 is still text", b"\xC3\x28\xFF\x80", TEXT),
        // HTML: every tag, both terminators, any case, after whitespace.
        ("doctype", b"<!DOCTYPE HTML>", HTML),
        ("doctype lower", b"<!doctype html>", HTML),
        ("doctype with tab inside", b"<!DOCTYPE\tHTML>", TEXT),
        ("doctype glued", b"<!DOCTYPEHTML>", TEXT),
        ("html", b"<html>", HTML),
        (
            "html mixed case",
            b"<HtMl><bOdY>blah blah blah</body></html>",
            HTML,
        ),
        ("html upper", b"<HTML></HTML>", HTML),
        ("html space", b"<html lang=en>", HTML),
        ("head", b"<head>", HTML),
        ("script", b"<SCRIPT src=x>", HTML),
        ("iframe", b"<iframe>", HTML),
        ("h1", b"<h1>Title</h1>", HTML),
        ("h2 is not in the table", b"<h2>Title</h2>", TEXT),
        ("div", b"<div class=x>", HTML),
        ("font", b"<FONT>", HTML),
        ("table", b"<table>", HTML),
        ("a", b"<a href=x>", HTML),
        ("abbr is not a", b"<abbr>", TEXT),
        ("style", b"<style>", HTML),
        ("title", b"<title>", HTML),
        ("b", b"<b>", HTML),
        ("body", b"<body>", HTML),
        ("br", b"<br>", HTML),
        ("br self-closed", b"<br/>", TEXT),
        ("p", b"<p>", HTML),
        ("pre is not p", b"<pre>", TEXT),
        ("comment", b"<!-- hello -->", HTML),
        ("comment terminated at once", b"<!-->", HTML),
        ("comment with no terminator byte", b"<!---->", TEXT),
        ("leading whitespace", b"   <!DOCTYPE HTML>...", HTML),
        ("leading CRLF", b"\r\n<html>...", HTML),
        ("leading FF and tab", b"\x0c\t<div>", HTML),
        ("leading VT is binary", b"\x0b<html>", OCTET_STREAM),
        ("tag at the very end", b"<html", TEXT),
        ("newline is not a terminator", b"<html\n>", TEXT),
        ("slash is not a terminator", b"<p/>", TEXT),
        ("binary after the tag", b"<html>\x00\x01", HTML),
        ("non-ASCII byte does not fold", b"<\xC8TML>", TEXT),
        // XML.
        ("xml", b"<?xml version=\"1.0\"?>", XML),
        ("xml after whitespace", b"\n<?xml!", XML),
        ("xml needs no terminator", b"<?xmlfoo", XML),
        ("xml is case-sensitive", b"<?XML version", TEXT),
        ("xml truncated", b"<?xm", TEXT),
        // Documents.
        ("pdf", b"%PDF-1.7\n", "application/pdf"),
        ("pdf after space", b" %PDF-1.7", TEXT),
        ("pdf without dash", b"%PDF", TEXT),
        ("postscript", b"%!PS-Adobe-3.0", "application/postscript"),
        ("postscript wrong case", b"%!PS-adobe-3.0", TEXT),
        // Byte-order marks.
        (
            "utf-16be bom",
            b"\xFE\xFF\x00h",
            "text/plain; charset=utf-16be",
        ),
        (
            "utf-16le bom",
            b"\xFF\xFEh\x00",
            "text/plain; charset=utf-16le",
        ),
        ("utf-8 bom then NUL", b"\xEF\xBB\xBF\x00", TEXT),
        ("utf-8 bom before html", b"\xEF\xBB\xBF<html>", TEXT),
        ("utf-16be bom too short", b"\xFE\xFF", TEXT),
        (
            "utf-16be bom and NUL too short",
            b"\xFE\xFF\x00",
            OCTET_STREAM,
        ),
        ("bom after whitespace", b" \xFE\xFF\x00h", OCTET_STREAM),
        // Images.
        ("icon", b"\x00\x00\x01\x00\x01\x00", "image/x-icon"),
        ("cursor", b"\x00\x00\x02\x00\x01\x00", "image/x-icon"),
        ("not an icon", b"\x00\x00\x03\x00", OCTET_STREAM),
        ("bmp", b"BM", "image/bmp"),
        ("bmp header", b"BM6\x00\x0c\x00", "image/bmp"),
        ("bmp lower", b"bm", TEXT),
        ("gif87a", b"GIF87a", "image/gif"),
        ("gif89a", b"GIF89a...", "image/gif"),
        ("gif88a", b"GIF88a", TEXT),
        ("webp", b"RIFF$\x00\x00\x00WEBPVP8 ", "image/webp"),
        ("webp bare", b"RIFF\x00\x00\x00\x00WEBPVP", "image/webp"),
        ("webp without VP", b"RIFF$\x00\x00\x00WEBPXX", OCTET_STREAM),
        ("png", b"\x89PNG\r\n\x1A\n\x00\x00\x00\x0dIHDR", "image/png"),
        ("png truncated", b"\x89PNG\r\n\x1A", OCTET_STREAM),
        ("jpeg", b"\xFF\xD8\xFF\xE0\x00\x10JFIF", "image/jpeg"),
        ("jpeg truncated", b"\xFF\xD8", TEXT),
        // Audio and video.
        (
            "aiff",
            b"FORM\x00\x00\x00\x00AIFFCOMM\x00\x00\x00\x12\x00\x01",
            "audio/aiff",
        ),
        ("aifc", b"FORM\x00\x00\x00\x00AIFC", OCTET_STREAM),
        ("mp3 id3", b"ID3\x03\x00\x00\x00\x00\x0f", "audio/mpeg"),
        ("id3 bare", b"ID3", "audio/mpeg"),
        ("id3 lower", b"id3", TEXT),
        (
            "ogg",
            b"OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00",
            "application/ogg",
        ),
        ("ogg wrong version", b"OggS\x01", OCTET_STREAM),
        ("ogg lower", b"oggS\x00", OCTET_STREAM),
        ("midi", b"MThd\x00\x00\x00\x06\x00\x01", "audio/midi"),
        (
            "midi wrong length",
            b"MThd\x00\x00\x00\x07\x00\x01",
            OCTET_STREAM,
        ),
        ("avi", b"RIFF,O\n\x00AVI LIST\xC0", "video/avi"),
        (
            "avi other length",
            b"RIFF,\n\x00\x00AVI LIST\xC0",
            "video/avi",
        ),
        ("avi without space", b"RIFF,O\n\x00AVI_", OCTET_STREAM),
        (
            "wave",
            b"RIFFb\xb8\x00\x00WAVEfmt \x12\x00\x00\x00\x06",
            "audio/wave",
        ),
        (
            "wave other length",
            b"RIFF,\x00\x00\x00WAVEfmt ",
            "audio/wave",
        ),
        ("wave truncated", b"RIFF,\x00\x00\x00WAV", OCTET_STREAM),
        (
            "dropped .snd row",
            b".snd\x00\x00\x00\x18\x00\x00",
            OCTET_STREAM,
        ),
        (
            "mp4 major brand",
            b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom<\x06t\xbfmdat",
            "video/mp4",
        ),
        (
            "mp4 compatible brand",
            b"\x00\x00\x00\x14ftypisom\x00\x00\x02\x00mp41",
            "video/mp4",
        ),
        (
            "mp4 brand only in the minor version",
            b"\x00\x00\x00\x14ftypisommp41avc1",
            OCTET_STREAM,
        ),
        (
            "mp4 brand past the box",
            b"\x00\x00\x00\x10ftypisom\x00\x00\x00\x00mp41",
            OCTET_STREAM,
        ),
        (
            "mp4 size not a multiple of 4",
            b"\x00\x00\x00\x15ftypmp42\x00\x00\x00\x00mp42isom\x00",
            OCTET_STREAM,
        ),
        (
            "mp4 box longer than the data",
            b"\x00\x00\x00\x20ftypmp42\x00\x00\x00\x00",
            OCTET_STREAM,
        ),
        ("mp4 box of 8", b"\x00\x00\x00\x08ftypmp42", OCTET_STREAM),
        ("mp4 box of 0", b"\x00\x00\x00\x00ftypmp42", OCTET_STREAM),
        ("mp4 too short", b"\x00\x00\x00\x08ftyp", OCTET_STREAM),
        (
            "mp4 box type is case-sensitive",
            b"\x00\x00\x00\x18FTYPmp42\x00\x00\x00\x00mp42isom",
            OCTET_STREAM,
        ),
        ("webm", b"\x1A\x45\xDF\xA3\x9F\x42\x86\x81", "video/webm"),
        ("webm truncated", b"\x1A\x45\xDF", OCTET_STREAM),
        // Fonts.
        (
            "eot",
            b"\x10\x02\x00\x00\x9C\x01\x00\x00\x02\x00\x02\x00\x04\x00\x00\x00\
              \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00LP\x01\x00",
            "application/vnd.ms-fontobject",
        ),
        (
            "LP at byte 34 of text is a font",
            b"0123456789012345678901234567890123LP",
            "application/vnd.ms-fontobject",
        ),
        (
            "LP at byte 33",
            b"012345678901234567890123456789012LP",
            TEXT,
        ),
        (
            "ttf with LP at 34 is eot first",
            b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00LP",
            "application/vnd.ms-fontobject",
        ),
        (
            "icon with LP at 34 is an icon first",
            b"\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
              \x00\x00LP",
            "image/x-icon",
        ),
        (
            "ttf",
            b"\x00\x01\x00\x00\x00\x17\x01\x00\x00\x04\x01\x60\x4f",
            "font/ttf",
        ),
        ("ttf near miss", b"\x00\x01\x00\x01\x00\x17", OCTET_STREAM),
        (
            "otf",
            b"OTTO\x00\x0e\x00\x80\x00\x03\x00\x60BASE",
            "font/otf",
        ),
        ("otf lower", b"otto", TEXT),
        ("ttc", b"ttcf\x00\x01\x00\x00", "font/collection"),
        ("ttc upper", b"TTCF", TEXT),
        ("woff", b"wOFF\x00\x01\x00\x00\x00\x00\x30\x54", "font/woff"),
        ("woff lower", b"woff", TEXT),
        ("woff2", b"wOF2\x00\x01\x00\x00\x00", "font/woff2"),
        ("woff3", b"wOF3\x00\x01", OCTET_STREAM),
        // Archives.
        (
            "gzip",
            b"\x1F\x8B\x08\x00\x00\x00\x00\x00",
            "application/x-gzip",
        ),
        ("gzip other method", b"\x1F\x8B\x07", OCTET_STREAM),
        ("zip", b"PK\x03\x04\x14\x00", "application/zip"),
        ("empty zip", b"PK\x05\x06\x00\x00", OCTET_STREAM),
        (
            "rar 4",
            b"Rar!\x1A\x07\x00\xCF\x90",
            "application/x-rar-compressed",
        ),
        (
            "rar 5",
            b"Rar!\x1A\x07\x01\x00\x33",
            "application/x-rar-compressed",
        ),
        (
            "rar with the standard's magic",
            b"Rar \x1A\x07\x00",
            OCTET_STREAM,
        ),
        (
            "rar 5 with the standard's magic",
            b"Rar \x1A\x07\x01\x00",
            OCTET_STREAM,
        ),
        ("rar unknown version", b"Rar!\x1A\x07\x02\x00", OCTET_STREAM),
        ("wasm", b"\x00asm\x01\x00\x00\x00", "application/wasm"),
        ("wasm magic only", b"\x00asm", "application/wasm"),
        ("wasm upper", b"\x00ASM\x01\x00\x00\x00", OCTET_STREAM),
    ];

    #[test]
    fn table() {
        let mut failures = Vec::new();
        for &(desc, data, want) in CASES {
            let got = detect(data);
            if got != want {
                failures.push(format!("{desc}: {data:?} gave {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn every_answer_in_the_table_is_exercised() {
        let mut answers: Vec<&str> = SIGNATURES
            .iter()
            .map(|sig| match *sig {
                Sig::Html(_) => HTML,
                Sig::Masked { ct, .. } | Sig::Exact(_, ct) => ct,
                Sig::Mp4 => "video/mp4",
                Sig::Text => TEXT,
            })
            .collect();
        answers.push(OCTET_STREAM);
        for answer in answers {
            assert!(
                CASES.iter().any(|&(_, _, want)| want == answer),
                "no case expects {answer}"
            );
        }
        for sig in SIGNATURES {
            if let Sig::Html(tag) = *sig {
                let mut doc = tag.to_ascii_lowercase();
                doc.push(b'>');
                assert_eq!(detect(&doc), HTML, "{}", String::from_utf8_lossy(&doc));
            }
        }
    }

    #[test]
    fn control_bytes_split_text_from_binary() {
        // Tab, LF, FF, CR and ESC are the only control bytes text may hold.
        let text_controls = [0x09, 0x0A, 0x0C, 0x0D, 0x1B];
        for b in 0..=u8::MAX {
            let binary = b < 0x20 && !text_controls.contains(&b);
            let want = if binary { OCTET_STREAM } else { TEXT };
            assert_eq!(detect(&[b'a', b, b'a']), want, "byte {b:#04x}");
            // Leading whitespace is skipped before the scan, which changes nothing.
            assert_eq!(detect(&[b' ', b'\n', b, b'z']), want, "byte {b:#04x}");
        }
    }

    #[test]
    fn only_the_first_512_bytes_count() {
        let mut text = vec![b'a'; SNIFF_LEN];
        text.push(0x00);
        assert_eq!(detect(&text), TEXT, "a NUL at byte 512 is not seen");
        text[SNIFF_LEN - 1] = 0x00;
        assert_eq!(detect(&text), OCTET_STREAM, "a NUL at byte 511 is");

        let mut late_png = vec![b'a'; SNIFF_LEN];
        late_png.extend_from_slice(b"\x89PNG\r\n\x1A\n");
        assert_eq!(detect(&late_png), TEXT);

        // The tag and its terminator must both fall inside the window.
        let mut html = vec![b' '; SNIFF_LEN - 3];
        html.extend_from_slice(b"<p>");
        assert_eq!(detect(&html), HTML);
        let mut cut = vec![b' '; SNIFF_LEN - 2];
        cut.extend_from_slice(b"<p>");
        assert_eq!(detect(&cut), TEXT);
    }

    #[test]
    fn mp4_box_must_fit_in_the_window() {
        // An `ftyp` box of `size` bytes whose last brand is mp41, in `len` bytes of data.
        let mp4 = |size: u32, len: usize| {
            let mut data = vec![0; len];
            data[..4].copy_from_slice(&size.to_be_bytes());
            data[4..12].copy_from_slice(b"ftypisom");
            let last = size as usize - 4;
            data[last..last + 4].copy_from_slice(b"mp41");
            data
        };
        assert_eq!(detect(&mp4(508, 508)), "video/mp4");
        assert_eq!(detect(&mp4(508, 600)), "video/mp4");
        // A 512-byte box would fit, but its size field reads 00 00 02 00: a cursor, earlier on.
        assert_eq!(detect(&mp4(512, 600)), "image/x-icon");
        // The data has the whole box, but the box no longer fits in what is read.
        assert_eq!(detect(&mp4(516, 600)), OCTET_STREAM);
    }
}
