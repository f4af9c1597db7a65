//! TOML text → the same tree of [`Node`]s the YAML front end makes, so a `traefik.toml` or a
//! `.toml` dynamic file goes through the very same checks as its YAML twin (Traefik reads both
//! into the same configuration types).
//!
//! The toml crate's span-keeping parser (`DeTable`: every key and value with its byte range)
//! does the TOML; this module only folds its tables into [`Node`]s, under the YAML front end's
//! budgets (file size, nesting depth). Tables keep their source order. A datetime, which no
//! Traefik option takes, becomes its text, so the type check names it.

use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, Span};
use crate::yaml::{Key, MAX_DEPTH, Node, NodeKind};

use toml::de::{DeTable, DeValue};

/// Parses `text` (registered as `file`); `None` for a document without a single key.
pub fn parse(file: FileId, text: &str) -> Result<Option<Node>, Diagnostic> {
    crate::yaml::within_size(text)?;
    let table = DeTable::parse(text).map_err(|e| {
        let span = e.span().map_or_else(
            || Span::new(file, 0, 0),
            |r| Span::new(file, r.start, r.end),
        );
        Diagnostic::error(Code::TomlSyntax, e.message().trim().to_owned()).at(Some(span))
    })?;
    let range = table.span();
    let table = table.into_inner();
    if table.is_empty() {
        return Ok(None);
    }
    let span = Span::new(file, range.start, range.start);
    let kind = map(file, table, 1)?;
    Ok(Some(Node { kind, span }))
}

fn map(file: FileId, table: DeTable<'_>, depth: usize) -> Result<NodeKind, Diagnostic> {
    let mut out = Vec::with_capacity(table.len());
    for (key, value) in table {
        let key_span = key.span();
        let key = Key {
            text: key.into_inner().into_owned(),
            span: Span::new(file, key_span.start, key_span.end),
        };
        out.push((key, node(file, value, depth)?));
    }
    Ok(NodeKind::Map(out))
}

fn node(file: FileId, value: toml::Spanned<DeValue<'_>>, depth: usize) -> Result<Node, Diagnostic> {
    let range = value.span();
    let span = Span::new(file, range.start, range.end);
    if depth > MAX_DEPTH {
        return Err(Diagnostic::error(
            Code::YamlLimit,
            format!("nesting deeper than {MAX_DEPTH} levels"),
        )
        .at(Some(span)));
    }
    let kind = match value.into_inner() {
        DeValue::String(s) => NodeKind::Str(s.into_owned()),
        DeValue::Boolean(b) => NodeKind::Bool(b),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            let (sign, digits) = match digits.strip_prefix('-') {
                Some(rest) => (-1, rest.to_owned()),
                None => (1, digits.trim_start_matches('+').to_owned()),
            };
            match i64::from_str_radix(&digits, i.radix()) {
                Ok(n) => NodeKind::Int(sign * n),
                Err(_) => match u64::from_str_radix(&digits, i.radix()) {
                    Ok(n) if sign > 0 => NodeKind::UInt(n),
                    _ => {
                        return Err(Diagnostic::error(
                            Code::TomlSyntax,
                            format!("the integer {i} does not fit in 64 bits"),
                        )
                        .at(Some(span)));
                    }
                },
            }
        }
        DeValue::Float(f) => {
            let text = f.as_str().replace('_', "");
            let n = match text.as_str() {
                "inf" | "+inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" | "+nan" | "-nan" => f64::NAN,
                t => t.parse::<f64>().map_err(|_| {
                    Diagnostic::error(Code::TomlSyntax, format!("`{f}` is not a number"))
                        .at(Some(span))
                })?,
            };
            NodeKind::Float(n)
        }
        DeValue::Datetime(d) => NodeKind::Str(d.to_string()),
        DeValue::Array(items) => NodeKind::Seq(
            items
                .into_iter()
                .map(|v| node(file, v, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(t) => map(file, t, depth + 1)?,
    };
    Ok(Node { kind, span })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> FileId {
        let mut sources = crate::source::SourceMap::default();
        sources.add(crate::source::SourceFile::new(
            "t.toml",
            std::path::Path::new("t.toml"),
            String::new(),
        ))
    }

    fn keys(n: &Node) -> Vec<&str> {
        match &n.kind {
            NodeKind::Map(m) => m.iter().map(|(k, _)| k.text.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    fn get<'a>(n: &'a Node, key: &str) -> &'a Node {
        match &n.kind {
            NodeKind::Map(m) => m
                .iter()
                .find(|(k, _)| k.text == key)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no {key}")),
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn tables_arrays_of_tables_and_scalars_become_the_yaml_tree_in_source_order() {
        let text = "[http.routers.web]\nrule = \"Host(`a`)\"\npriority = 0x10\nentryPoints = [\"web\", \"websecure\"]\n\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://b:1\"\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://c:1\"\n\n[http.services.app.loadBalancer]\npassHostHeader = false\n";
        let root = parse(id(), text).unwrap().unwrap();
        let http = get(&root, "http");
        assert_eq!(keys(http), ["routers", "services"]);
        let web = get(get(http, "routers"), "web");
        assert_eq!(keys(web), ["rule", "priority", "entryPoints"]);
        assert_eq!(get(web, "priority").kind, NodeKind::Int(16));
        let rule = get(web, "rule");
        assert_eq!(rule.kind, NodeKind::Str("Host(`a`)".into()));
        // The span points at the value as written.
        assert_eq!(&text[rule.span.start..rule.span.end], "\"Host(`a`)\"");
        let lb = get(get(get(http, "services"), "app"), "loadBalancer");
        match &get(lb, "servers").kind {
            NodeKind::Seq(s) => assert_eq!(s.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(get(lb, "passHostHeader").kind, NodeKind::Bool(false));
    }

    #[test]
    fn a_syntax_error_is_located_and_an_empty_file_is_no_document() {
        let e = parse(id(), "[http]\nrouters = {\n").unwrap_err();
        assert_eq!(e.code, Code::TomlSyntax);
        assert!(e.span.is_some());
        let e = parse(id(), "a = 1\na = 2\n").unwrap_err();
        assert_eq!(
            e.code,
            Code::TomlSyntax,
            "a repeated key is an error, as in Go's TOML"
        );
        assert!(parse(id(), "# nothing\n").unwrap().is_none());
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing_far() {
        let deep = format!("a = {}1{}\n", "[".repeat(60), "]".repeat(60));
        match parse(id(), &deep) {
            Err(e) => assert!(
                matches!(e.code, Code::YamlLimit | Code::TomlSyntax),
                "{e:?}"
            ),
            Ok(_) => panic!("60 levels accepted"),
        }
    }
}
