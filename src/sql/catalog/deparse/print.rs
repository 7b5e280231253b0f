//! Printing a typed tree (deparse.rs's `N`) as PostgreSQL's ruleutils.c prints expressions:
//! every operator parenthesized, or in "pretty" mode only where ruleutils' isSimpleNode asks
//! for parentheses.

use super::{N, T};

/// What kind of parent a node is printed under (ruleutils' isSimpleNode looks at it).
#[derive(Clone, Copy, PartialEq)]
enum Parent {
    /// A binary operator, by its precedence class: 2 for `* / %`, 1 for `+ -`, 0 for others.
    Op(u8),
    And,
    Or,
    Not,
    /// A cast, `IS NULL`, `ANY (...)` and everything else not listed.
    Other,
}

fn op_class(op: &str) -> u8 {
    match op {
        "*" | "/" | "%" => 2,
        "+" | "-" => 1,
        _ => 0,
    }
}

/// ruleutils.c's isSimpleNode: whether `n` needs no parentheses under `parent` in pretty mode.
/// `first`: `n` is the parent operator's left operand.
fn is_simple(n: &N, parent: Parent, first: bool) -> bool {
    match n {
        N::Var(..)
        | N::Const(..)
        | N::Null(_)
        | N::Bool(_)
        | N::Func(..)
        | N::Array(_)
        | N::Untyped(_)
        | N::Syntax(..) => true,
        N::Cast(x, _) => is_simple(x, Parent::Other, false),
        N::Op(op, ..) => {
            if let Parent::Op(p) = parent {
                let c = op_class(op);
                if c == 0 || p == 0 {
                    return false;
                }
                if c == 2 && p == 1 {
                    return true;
                }
                if c == 1 && p == 2 {
                    return false;
                }
                return first;
            }
            matches!(parent, Parent::And | Parent::Or | Parent::Not)
        }
        N::NullTest(..) => matches!(parent, Parent::And | Parent::Or | Parent::Not),
        N::Neg(..) | N::ArrayOp(..) => false,
        N::And(_) | N::Not(_) => matches!(parent, Parent::And | Parent::Or),
        N::Or(_) => parent == Parent::Or,
    }
}

/// ruleutils.c's get_rule_expr_paren.
fn print_paren(n: &N, parent: Parent, first: bool, pretty: bool, out: &mut String) {
    let paren = pretty && !is_simple(n, parent, first);
    if paren {
        out.push('(');
    }
    print(n, pretty, out);
    if paren {
        out.push(')');
    }
}

pub(super) fn print(n: &N, pretty: bool, out: &mut String) {
    let open = |out: &mut String| {
        if !pretty {
            out.push('(')
        }
    };
    let close = |out: &mut String| {
        if !pretty {
            out.push(')')
        }
    };
    match n {
        N::Var(name, _) => out.push_str(name),
        N::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        N::Null(t) => {
            out.push_str("NULL::");
            out.push_str(&t.name());
        }
        N::Array(items) => {
            out.push_str("ARRAY[");
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print(it, pretty, out);
            }
            out.push(']');
        }
        N::Const(s, t) => {
            let quoted = format!("'{}'", s.replace('\'', "''"));
            match t {
                T::Int4 if !s.starts_with('-') => out.push_str(s),
                T::Numeric if !s.starts_with('-') => out.push_str(s),
                _ => {
                    out.push_str(&quoted);
                    out.push_str("::");
                    out.push_str(&t.name());
                }
            }
        }
        N::Op(op, l, r, _) => {
            let p = Parent::Op(op_class(op));
            open(out);
            print_paren(l, p, true, pretty, out);
            out.push_str(&format!(" {op} "));
            print_paren(r, p, false, pretty, out);
            close(out);
        }
        N::Neg(x, _) => {
            open(out);
            out.push_str("- ");
            print_paren(x, Parent::Other, false, pretty, out);
            close(out);
        }
        N::And(args) | N::Or(args) => {
            let (p, sep) = if matches!(n, N::And(_)) {
                (Parent::And, " AND ")
            } else {
                (Parent::Or, " OR ")
            };
            open(out);
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                print_paren(a, p, false, pretty, out);
            }
            close(out);
        }
        N::Not(x) => {
            open(out);
            out.push_str("NOT ");
            print_paren(x, Parent::Not, false, pretty, out);
            close(out);
        }
        N::NullTest(x, not) => {
            open(out);
            print_paren(x, Parent::Other, false, pretty, out);
            out.push_str(if *not { " IS NOT NULL" } else { " IS NULL" });
            close(out);
        }
        N::ArrayOp(op, any, x, items) => {
            open(out);
            print_paren(x, Parent::Other, false, pretty, out);
            out.push_str(&format!(" {op} {} (ARRAY[", if *any { "ANY" } else { "ALL" }));
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print(it, pretty, out);
            }
            out.push_str("])");
            close(out);
        }
        N::Func(name, args, _) => {
            out.push_str(name);
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print(a, pretty, out);
            }
            out.push(')');
        }
        N::Untyped(Some(s)) => out.push_str(&format!("'{}'", s.replace('\'', "''"))),
        N::Untyped(None) => out.push_str("NULL::unknown"),
        N::Syntax(name, args, tail, _) => {
            out.push_str(name);
            out.push('(');
            for (before, a) in args {
                out.push_str(before);
                print(a, pretty, out);
            }
            out.push_str(tail);
            out.push(')');
        }
        N::Cast(x, t) => {
            if pretty {
                print_paren(x, Parent::Other, false, pretty, out);
            } else {
                out.push('(');
                print(x, pretty, out);
                out.push(')');
            }
            out.push_str("::");
            out.push_str(&t.name());
        }
    }
}
