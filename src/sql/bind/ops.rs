//! Binding of jsonb's operators and the regular-expression match operators.

use sqlparser::ast as A;

use super::Binder;
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};

impl Binder<'_> {
    /// A text operand of a pattern match: a `character(n)` value as it is (with its blanks,
    /// as PostgreSQL's bpchar pattern operators read it), any other text type as `text`.
    pub(super) fn text_keeping_blanks(&mut self, e: Expr, t: Ty) -> Result<Expr> {
        if t == Ty::Bpchar {
            Ok(e)
        } else {
            self.coerce(e, t, Ty::Text)
        }
    }

    /// jsonb's operators: `->` (a field by text key or an element by integer index, as jsonb),
    /// `->>` (the same as text), `#>` / `#>>` (by a path, `text[]`), `@>` / `<@` (containment),
    /// `?` (a key or string element), `?|` / `?&` (any / all of a `text[]` of keys), `||`
    /// (concatenation) and `-` (a key, an index or a `text[]` of keys removed). An untyped
    /// literal is jsonb where the operator takes jsonb, else the key, path or index type.
    pub(super) fn json_op(
        &mut self,
        op: &A::BinaryOperator,
        (l, lt): (Expr, Ty),
        (r, rt): (Expr, Ty),
    ) -> Result<(Expr, Ty)> {
        use A::BinaryOperator as B;
        let undefined = || {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {op} {}", lt.name(), rt.name()),
            )
        };
        let jsonb_side = |t: Ty| matches!(t, Ty::Jsonb | Ty::Unknown);
        if lt == Ty::Json {
            return self.plain_json_op(op, l, (r, rt), undefined);
        }
        if !jsonb_side(lt) {
            return Err(undefined());
        }
        let l = self.coerce(l, lt, Ty::Jsonb)?;
        let text_array = Ty::Array(&Ty::Text);
        let bool_fn = |f: Func, a: Expr, b: Expr| Ok((Expr::Func(f, vec![a, b], Ty::Bool), Ty::Bool));
        match op {
            B::AtArrow | B::ArrowAt | B::StringConcat => {
                if !jsonb_side(rt) {
                    return Err(undefined());
                }
                let r = self.coerce(r, rt, Ty::Jsonb)?;
                return match op {
                    B::AtArrow => bool_fn(Func::JsonContains, l, r),
                    B::ArrowAt => bool_fn(Func::JsonContains, r, l),
                    _ => Ok((Expr::Func(Func::JsonConcat, vec![l, r], Ty::Jsonb), Ty::Jsonb)),
                };
            }
            B::Question => {
                if !matches!(rt, Ty::Text | Ty::Unknown) {
                    return Err(undefined());
                }
                let r = self.coerce(r, rt, Ty::Text)?;
                return bool_fn(Func::JsonHasKey, l, r);
            }
            B::QuestionPipe | B::QuestionAnd | B::HashArrow | B::HashLongArrow => {
                if !(rt == text_array || rt == Ty::Unknown) {
                    return Err(undefined());
                }
                let r = self.coerce(r, rt, text_array)?;
                return match op {
                    B::QuestionPipe => bool_fn(Func::JsonHasAnyKey, l, r),
                    B::QuestionAnd => bool_fn(Func::JsonHasAllKeys, l, r),
                    B::HashArrow => Ok((Expr::Func(Func::JsonPath, vec![l, r], Ty::Jsonb), Ty::Jsonb)),
                    _ => Ok((Expr::Func(Func::JsonPathText, vec![l, r], Ty::Text), Ty::Text)),
                };
            }
            B::Minus => {
                let (f, r) = match rt {
                    Ty::Text | Ty::Unknown => (Func::JsonDeleteKey, self.coerce(r, rt, Ty::Text)?),
                    t if t.is_int() => (Func::JsonDeleteIndex, r),
                    t if t == text_array => (Func::JsonDeleteKeys, r),
                    _ => return Err(undefined()),
                };
                return Ok((Expr::Func(f, vec![l, r], Ty::Jsonb), Ty::Jsonb));
            }
            _ => {}
        }
        let r = match rt {
            Ty::Text | Ty::Unknown => self.coerce(r, rt, Ty::Text)?,
            t if t.is_int() => r,
            _ => return Err(undefined()),
        };
        Ok(if *op == B::LongArrow {
            (Expr::Func(Func::JsonGetText, vec![l, r], Ty::Text), Ty::Text)
        } else {
            (Expr::Func(Func::JsonGet, vec![l, r], Ty::Jsonb), Ty::Jsonb)
        })
    }

    /// json's operators: `->` / `->>` (a field by text key or an element by integer index) and
    /// `#>` / `#>>` (by a `text[]` path), returning the part's original text as json (or its
    /// contents as text); json has none of jsonb's other operators.
    fn plain_json_op(
        &mut self,
        op: &A::BinaryOperator,
        l: Expr,
        (r, rt): (Expr, Ty),
        undefined: impl Fn() -> Error,
    ) -> Result<(Expr, Ty)> {
        use A::BinaryOperator as B;
        let text_array = Ty::Array(&Ty::Text);
        let (f, r, ty) = match op {
            B::HashArrow | B::HashLongArrow => {
                if !(rt == text_array || rt == Ty::Unknown) {
                    return Err(undefined());
                }
                let r = self.coerce(r, rt, text_array)?;
                if *op == B::HashArrow {
                    (Func::JsonPath, r, Ty::Json)
                } else {
                    (Func::JsonPathText, r, Ty::Text)
                }
            }
            B::Arrow | B::LongArrow => {
                let r = match rt {
                    Ty::Text | Ty::Unknown => self.coerce(r, rt, Ty::Text)?,
                    t if t.is_int() => r,
                    _ => return Err(undefined()),
                };
                if *op == B::Arrow {
                    (Func::JsonGet, r, Ty::Json)
                } else {
                    (Func::JsonGetText, r, Ty::Text)
                }
            }
            _ => return Err(undefined()),
        };
        Ok((Expr::Func(f, vec![l, r], ty), ty))
    }

    /// `x ~ p` and its variants (`ci`: `~*`, `not`: `!~`), over text.
    pub(super) fn regex_op(
        &mut self,
        (x, xt): (Expr, Ty),
        (p, pt): (Expr, Ty),
        ci: bool,
        not: bool,
        sym: &str,
    ) -> Result<(Expr, Ty)> {
        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Bpchar);
        if !texty(xt) || !texty(pt) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {sym} {}", xt.name(), pt.name()),
            ));
        }
        // A character(n) operand keeps its blanks here (PostgreSQL's bpcharregexeq).
        let x = self.text_keeping_blanks(x, xt)?;
        let p = self.text_keeping_blanks(p, pt)?;
        let f = if ci { Func::RegexIMatch } else { Func::RegexMatch };
        let m = Expr::Func(f, vec![x, p], Ty::Bool);
        Ok((if not { Expr::Not(Box::new(m)) } else { m }, Ty::Bool))
    }
}
