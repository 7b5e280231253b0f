//! Patterns rewritten for the regex crate to match as PostgreSQL's do. Case-insensitive
//! regular expressions as PostgreSQL's are in the C locale: only ASCII letters match their
//! other case (`'É' ~* 'é'` is false), where the regex crate's own case-insensitive mode folds
//! all of Unicode; each ASCII letter (outside a class or in one, ranges too) is given its other
//! case. A non-greedy quantified group (`(?:.*){1,1}?`, as similar_escape writes the part
//! before a SIMILAR TO pattern's first `#"` separator) prefers its shortest match as a whole
//! in PostgreSQL's engine; the quantifiers inside it become non-greedy for that. The pattern
//! is parsed, rewritten and printed again.

use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem};

/// `p` with every ASCII letter matching both cases when `ci`, and the quantifiers inside a
/// non-greedy group non-greedy; None when there is nothing to rewrite or `p` does not parse
/// (the caller compiles `p` itself then, for the regex crate's error).
pub(crate) fn pg_pattern(p: &str, ci: bool, expanded: bool) -> Option<String> {
    if !ci && !p.contains('?') {
        return None;
    }
    let mut tree = ast::parse::ParserBuilder::new()
        .ignore_whitespace(expanded)
        .build()
        .parse(p)
        .ok()?;
    if ci {
        fold(&mut tree);
    }
    shortest(&mut tree, false);
    let mut out = String::new();
    ast::print::Printer::new().print(&tree, &mut out).ok()?;
    Some(out)
}

/// Makes the repetitions inside a non-greedy repetition non-greedy (`inside`: within one).
fn shortest(a: &mut Ast, inside: bool) {
    match a {
        Ast::Repetition(r) => {
            if inside {
                r.greedy = false;
            }
            let inside = inside || !r.greedy;
            shortest(&mut r.ast, inside);
        }
        Ast::Group(g) => shortest(&mut g.ast, inside),
        Ast::Alternation(x) => x.asts.iter_mut().for_each(|a| shortest(a, inside)),
        Ast::Concat(x) => x.asts.iter_mut().for_each(|a| shortest(a, inside)),
        _ => {}
    }
}

/// The other case of an ASCII letter.
fn other_case(c: char) -> Option<char> {
    match c {
        'a'..='z' => Some(c.to_ascii_uppercase()),
        'A'..='Z' => Some(c.to_ascii_lowercase()),
        _ => None,
    }
}

fn literal(span: ast::Span, c: char) -> ast::Literal {
    ast::Literal {
        span,
        kind: ast::LiteralKind::Verbatim,
        c,
    }
}

fn fold(a: &mut Ast) {
    match a {
        Ast::Literal(l) => {
            if let Some(o) = other_case(l.c) {
                let items = vec![
                    ClassSetItem::Literal(literal(l.span, l.c)),
                    ClassSetItem::Literal(literal(l.span, o)),
                ];
                let union = ast::ClassSetUnion { span: l.span, items };
                *a = Ast::ClassBracketed(Box::new(ast::ClassBracketed {
                    span: l.span,
                    negated: false,
                    kind: ClassSet::Item(ClassSetItem::Union(union)),
                }));
            }
        }
        Ast::ClassBracketed(b) => fold_set(&mut b.kind),
        Ast::Repetition(r) => fold(&mut r.ast),
        Ast::Group(g) => fold(&mut g.ast),
        Ast::Alternation(x) => x.asts.iter_mut().for_each(fold),
        Ast::Concat(x) => x.asts.iter_mut().for_each(fold),
        _ => {}
    }
}

fn fold_set(s: &mut ClassSet) {
    match s {
        ClassSet::Item(i) => fold_item(i),
        ClassSet::BinaryOp(op) => {
            fold_set(&mut op.lhs);
            fold_set(&mut op.rhs);
        }
    }
}

/// A class item with the other case of its ASCII letters added (a negated class is
/// negated after, as PostgreSQL folds before negating).
fn fold_item(i: &mut ClassSetItem) {
    let mut extra = Vec::new();
    match i {
        ClassSetItem::Literal(l) => {
            if let Some(o) = other_case(l.c) {
                extra.push(ClassSetItem::Literal(literal(l.span, o)));
            }
        }
        ClassSetItem::Range(r) => {
            let (lo, hi) = (r.start.c, r.end.c);
            for (from, to) in [('a', 'z'), ('A', 'Z')] {
                let (s, e) = (lo.max(from), hi.min(to));
                if s <= e {
                    let (s, e) = (other_case(s).unwrap_or(s), other_case(e).unwrap_or(e));
                    extra.push(ClassSetItem::Range(ast::ClassSetRange {
                        span: r.span,
                        start: literal(r.span, s),
                        end: literal(r.span, e),
                    }));
                }
            }
        }
        ClassSetItem::Bracketed(b) => fold_set(&mut b.kind),
        ClassSetItem::Union(u) => u.items.iter_mut().for_each(fold_item),
        _ => {}
    }
    if !extra.is_empty() {
        let span = *i.span();
        let mut items = vec![std::mem::replace(i, ClassSetItem::Empty(span))];
        items.extend(extra);
        *i = ClassSetItem::Union(ast::ClassSetUnion { span, items });
    }
}

#[cfg(test)]
mod tests {
    use super::pg_pattern;

    fn fold(p: &str, expanded: bool) -> Option<String> {
        pg_pattern(p, true, expanded)
    }

    fn is_match(p: &str, s: &str) -> bool {
        regex::Regex::new(&fold(p, false).unwrap()).unwrap().is_match(s)
    }

    #[test]
    fn non_greedy_groups_prefer_their_shortest_match() {
        let p = pg_pattern("^(?:.*X){1,1}?(.*){1,1}(?:)$", false, false).unwrap();
        let re = regex::Regex::new(&p).unwrap();
        assert_eq!(&re.captures("aaXbbXcc").unwrap()[1], "bbXcc");
        assert_eq!(pg_pattern("a.*b", false, false), None);
    }

    #[test]
    fn folds_ascii_letters_only() {
        assert!(is_match("^abc$", "AbC"));
        assert!(!is_match("é", "É"));
        assert!(is_match("^[a-c]+$", "aBC"));
        assert!(is_match("^[^a]$", "b"));
        assert!(!is_match("^[^a]$", "A"));
        assert!(is_match("^[W-c]+$", "wXyZ[`abC"));
        assert!(is_match("^x{2}$", "xX"));
        assert!(is_match(r"^\d[[:alpha:]]$", "1q"));
        assert!(fold("(", false).is_none());
    }
}
