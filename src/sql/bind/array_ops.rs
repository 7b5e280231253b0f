//! Binding of array concatenation (`||`, `array_cat`, `array_append`, `array_prepend`) and the
//! check that keeps `varchar[]` and `text[]` apart where PostgreSQL has no operator between
//! them.

use super::Binder;
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};

/// 42883 for operator `op` between `varchar[]` and `text[]` (either way round), as PostgreSQL:
/// each has its comparison operators through anyarray, which takes two arrays of one type (an
/// untyped literal takes the other side's). Used by comparisons, `IS DISTINCT FROM` and `IN`.
pub(super) fn array_operands(lt: Ty, rt: Ty, op: &str) -> Result<()> {
    if matches!(
        (lt, rt),
        (Ty::Array(Ty::Varchar), Ty::Array(Ty::Text)) | (Ty::Array(Ty::Text), Ty::Array(Ty::Varchar))
    ) {
        return Err(Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("operator does not exist: {} {op} {}", lt.name(), rt.name()),
        ));
    }
    Ok(())
}

/// The array type of the elements of `a` and `b` together, as PostgreSQL resolves
/// anycompatible (`integer` and `bigint`: `bigint[]`; `integer` and `numeric`: `numeric[]`);
/// None when they have no common type.
fn common_array(a: Ty, b: Ty) -> Option<Ty> {
    Ty::unify(a, b).and_then(Ty::array)
}

impl Binder<'_> {
    /// `a || b` where a side is an array: two arrays as [`Binder::array_cat`]; an array and an
    /// element as `array_append` / `array_prepend`. Both as PostgreSQL's anycompatiblearray
    /// operators: of the elements' common type (`int[] || bigint` is bigint[]), the array's
    /// own type when the element is of it (`varchar[] || varchar` is varchar[]).
    pub(super) fn array_concat(&mut self, l: (Expr, Ty), r: (Expr, Ty)) -> Result<(Expr, Ty)> {
        match (l.1, r.1) {
            (Ty::Array(_), Ty::Array(_) | Ty::Unknown) | (Ty::Unknown, Ty::Array(_)) => self.array_cat(l, r),
            (Ty::Array(_), _) => self.array_append(l, r, "operator does not exist: {l} || {r}"),
            _ => self.array_prepend(l, r, "operator does not exist: {l} || {r}"),
        }
    }

    /// `array_append(a, x)`: `a` with `x` after its elements. `undefined` is the error's text
    /// (42883) when `x` and `a`'s elements have no common type, with `{l}` and `{r}` for the
    /// types.
    pub(super) fn array_append(
        &mut self,
        (a, at): (Expr, Ty),
        x: (Expr, Ty),
        undefined: &str,
    ) -> Result<(Expr, Ty)> {
        let (one, ty) = self.one_element(at, x, undefined, false)?;
        let a = self.coerce(a, at, ty)?;
        self.array_cat((a, ty), (one, ty))
    }

    /// `array_prepend(x, a)`: `a` with `x` before its elements (see [`Binder::array_append`]).
    pub(super) fn array_prepend(
        &mut self,
        x: (Expr, Ty),
        (a, at): (Expr, Ty),
        undefined: &str,
    ) -> Result<(Expr, Ty)> {
        let (one, ty) = self.one_element(at, x, undefined, true)?;
        let a = self.coerce(a, at, ty)?;
        let (e, _) = self.array_cat((one, ty), (a, ty))?;
        Ok((e, ty))
    }

    /// `ARRAY[x]` of the array type common to array type `at` and `x` (`at` itself when `x`
    /// is of its element type, varchar and text being one), and that type; 42883 when there
    /// is none.
    fn one_element(
        &mut self,
        at: Ty,
        (x, xt): (Expr, Ty),
        undefined: &str,
        first: bool,
    ) -> Result<(Expr, Ty)> {
        let ty = match at {
            Ty::Array(e) if Ty::unify(e.operand(), xt.operand()) == Some(e.operand()) => Some(at),
            Ty::Array(e) => common_array(*e, xt),
            _ => None,
        };
        let Some(ty @ Ty::Array(elem)) = ty else {
            let (l, r) = if first { (xt, at) } else { (at, xt) };
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                undefined.replace("{l}", l.name()).replace("{r}", r.name()),
            ));
        };
        let x = self.coerce(x, xt.operand(), elem.operand())?;
        Ok((Expr::Func(Func::ArrayConstruct, vec![x], ty), ty))
    }

    /// `a || b` of two arrays (an untyped literal is read as the other side's array type):
    /// their elements in turn; a NULL side counts as empty, as PostgreSQL's array_cat takes
    /// it. Of the operands' type as bound when their elements are of one type (`varchar[]`
    /// kept: the first array's, as PostgreSQL resolves anycompatiblearray, `varchar[] ||
    /// text[]` or with an untyped literal is varchar[]), else of their elements' common type
    /// (`int[] || bigint[]` is bigint[]).
    pub(super) fn array_cat(&mut self, (l, lt): (Expr, Ty), (r, rt): (Expr, Ty)) -> Result<(Expr, Ty)> {
        let ty = match (lt, rt) {
            (Ty::Array(_), Ty::Unknown) => Some(lt),
            (Ty::Unknown, Ty::Array(_)) => Some(rt),
            (a, b) if a.operand() == b.operand() => Some(a),
            (Ty::Array(a), Ty::Array(b)) => common_array(*a, *b),
            _ => None,
        };
        let Some(ty) = ty else {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} || {}",
                    lt.operand().name(),
                    rt.operand().name()
                ),
            ));
        };
        // varchar[] and text[] are the same values: the operands as text[].
        let l = self.coerce(l, lt.operand(), ty.operand())?;
        let r = self.coerce(r, rt.operand(), ty.operand())?;
        Ok((Expr::Func(Func::ArrayCat, vec![l, r], ty), ty))
    }
}
