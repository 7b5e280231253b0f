//! Aggregate accumulators: one `Acc` per aggregate and group, fed row by row (`add`) and
//! turned into the aggregate's value at the end (`finish`); GROUP BY and window frames use them.

use super::*;

/// An integer or numeric value as a decimal (the operand of a numeric sum).
fn numeric_of(v: &Value) -> Decimal {
    match v {
        Value::Int(i) => Decimal::from(*i),
        Value::Numeric(d) => *d,
        _ => Decimal::ZERO,
    }
}

#[derive(Default, Clone)]
pub(super) struct Acc {
    count: i64,
    sum_i: i128,
    sum_f: f64,
    /// The sum of numeric values, and whether it left the representation (22003 at the end).
    sum_d: Decimal,
    sum_d_overflow: bool,
    /// The sum of interval values, and whether it left the interval range (22008 at the end).
    sum_iv: Interval,
    sum_iv_overflow: bool,
    /// min / max: the best value so far, with its array sort key when it is an array.
    best: Option<(Value, Option<Value>)>,
    all: Option<bool>,
    seen: Option<HashSet<Value>>,
    /// array_agg's values, each with its ORDER BY keys, in input order.
    items: Vec<(Vec<Value>, Value)>,
}

impl Acc {
    pub(super) fn new(spec: &AggSpec) -> Acc {
        Acc {
            seen: spec.distinct.then(HashSet::new),
            ..Acc::default()
        }
    }

    /// Adds one value of array_agg with its ORDER BY keys (NULL values too, as PostgreSQL's
    /// array_agg keeps them).
    pub(super) fn add_keyed(&mut self, v: Value, keys: Vec<Value>) {
        if let Some(seen) = &mut self.seen {
            if !seen.insert(v.clone()) {
                return;
            }
        }
        self.count += 1;
        self.items.push((keys, v));
    }

    pub(super) fn add(&mut self, spec: &AggSpec, v: Value) -> Result<()> {
        if spec.func == AggFunc::CountStar {
            self.count += 1;
            return Ok(());
        }
        if spec.func.keeps_order() {
            self.add_keyed(v, Vec::new());
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        // Arrays are compared (min, max, DISTINCT) by their elements' values, not their text.
        let key = match spec.arg_ty {
            Ty::Array(_) => Some(array_key(&v, spec.arg_ty)?),
            _ => None,
        };
        if let Some(seen) = &mut self.seen {
            if !seen.insert(key.clone().unwrap_or_else(|| v.clone())) {
                return Ok(());
            }
        }
        self.count += 1;
        match spec.func {
            AggFunc::Sum | AggFunc::Avg => match v {
                Value::Int(i) if spec.arg_ty != Ty::Numeric => self.sum_i += i as i128,
                Value::Float(f) => self.sum_f += f,
                Value::Interval(iv) => match self.sum_iv.add(&iv) {
                    Ok(s) => self.sum_iv = s,
                    Err(_) => self.sum_iv_overflow = true,
                },
                v @ (Value::Int(_) | Value::Numeric(_)) => match numeric::add(self.sum_d, numeric_of(&v)) {
                    Ok(s) => self.sum_d = s,
                    Err(_) => self.sum_d_overflow = true,
                },
                _ => {}
            },
            AggFunc::Min | AggFunc::Max => {
                let better = match &self.best {
                    None => true,
                    Some((b, bk)) => {
                        let o = match (&key, bk) {
                            (Some(k), Some(bk)) => k.total_cmp(bk),
                            _ => v.total_cmp(b),
                        };
                        if spec.func == AggFunc::Min {
                            o == Ordering::Less
                        } else {
                            o == Ordering::Greater
                        }
                    }
                };
                if better {
                    self.best = Some((v, key));
                }
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => {
                let b = v == Value::Bool(true);
                self.all = Some(match (self.all, spec.func) {
                    (None, _) => b,
                    (Some(a), AggFunc::BoolAnd) => a && b,
                    (Some(a), _) => a || b,
                });
            }
            _ => {}
        }
        Ok(())
    }

    pub(super) fn finish(self, spec: &AggSpec) -> Result<Value> {
        Ok(match spec.func {
            AggFunc::CountStar | AggFunc::Count => Value::Int(self.count),
            _ if self.count == 0 => Value::Null,
            // sum(bigint) is numeric (exact past bigint's range), as in PostgreSQL.
            AggFunc::Sum if spec.arg_ty == Ty::Int8 => Value::Numeric(
                Decimal::try_from_i128_with_scale(self.sum_i, 0).map_err(|_| numeric::overflow())?,
            ),
            AggFunc::Sum if spec.arg_ty.is_int() => {
                Value::Int(i64::try_from(self.sum_i).map_err(|_| Error::out_of_range("bigint out of range"))?)
            }
            AggFunc::Sum | AggFunc::Avg if spec.arg_ty == Ty::Interval && self.sum_iv_overflow => {
                return Err(Error::new(
                    SqlState::DATETIME_FIELD_OVERFLOW,
                    "interval out of range",
                ))
            }
            AggFunc::Sum if spec.arg_ty == Ty::Interval => Value::Interval(self.sum_iv),
            AggFunc::Avg if spec.arg_ty == Ty::Interval => {
                Value::Interval(self.sum_iv.div(self.count as f64)?)
            }
            AggFunc::Sum | AggFunc::Avg if spec.arg_ty == Ty::Numeric && self.sum_d_overflow => {
                return Err(numeric::overflow())
            }
            AggFunc::Sum if spec.arg_ty == Ty::Numeric => Value::Numeric(self.sum_d),
            AggFunc::Sum => Value::Float(self.sum_f),
            // PostgreSQL's avg of integers and of numeric: numeric division of the sum by the
            // count, at its division scale.
            AggFunc::Avg if spec.arg_ty.is_int() => {
                let sum =
                    Decimal::try_from_i128_with_scale(self.sum_i, 0).map_err(|_| numeric::overflow())?;
                Value::Numeric(numeric::div(sum, Decimal::from(self.count))?)
            }
            AggFunc::Avg if spec.arg_ty == Ty::Numeric => {
                Value::Numeric(numeric::div(self.sum_d, Decimal::from(self.count))?)
            }
            AggFunc::Avg => Value::Float(self.sum_f / self.count as f64),
            AggFunc::Min | AggFunc::Max => self.best.map_or(Value::Null, |b| b.0),
            AggFunc::BoolAnd | AggFunc::BoolOr => self.all.map_or(Value::Null, Value::Bool),
            AggFunc::ArrayAgg
            | AggFunc::JsonbAgg
            | AggFunc::JsonbObjectAgg
            | AggFunc::JsonAgg
            | AggFunc::JsonObjectAgg => {
                let mut items = self.items;
                if !spec.order.is_empty() {
                    // Stable: values with equal keys stay in input order.
                    let flags: Vec<(bool, bool)> =
                        spec.order.iter().map(|k| (k.desc, k.nulls_first)).collect();
                    items.sort_by(|a, b| compare_rows(&a.0, &b.0, &flags));
                } else if spec.distinct {
                    // PostgreSQL finds the distinct values by sorting them: ascending, NULL last.
                    items.sort_by(|a, b| {
                        compare_rows(
                            std::slice::from_ref(&a.1),
                            std::slice::from_ref(&b.1),
                            &[(false, false)],
                        )
                    });
                }
                if spec.func == AggFunc::JsonbObjectAgg {
                    let pairs = items
                        .into_iter()
                        .map(|(_, v)| object_pair(v))
                        .collect::<Result<Vec<_>>>()?;
                    return Ok(Value::Jsonb(Box::new(Json::object(pairs))));
                }
                if spec.func == AggFunc::JsonObjectAgg {
                    let fields: Vec<String> = items
                        .into_iter()
                        .map(|(_, v)| v.to_text().unwrap_or_default())
                        .collect();
                    return Ok(Value::Json(format!("{{ {} }}", fields.join(", "))));
                }
                if spec.func == AggFunc::JsonAgg {
                    // As PostgreSQL's json_agg: an array after the first element on a line of
                    // its own (`[[1], \n [2]]`).
                    let array = matches!(spec.arg_ty, Ty::Array(_));
                    let mut out = String::from("[");
                    for (i, (_, v)) in items.into_iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        match v.to_text() {
                            Some(t) => {
                                if i > 0 && array {
                                    out.push_str("\n ");
                                }
                                out.push_str(&t);
                            }
                            None => out.push_str("null"),
                        }
                    }
                    out.push(']');
                    return Ok(Value::Json(out));
                }
                if spec.func == AggFunc::JsonbAgg {
                    let elems = items
                        .into_iter()
                        .map(|(_, v)| match v {
                            Value::Jsonb(j) => Ok(*j),
                            Value::Null => Ok(Json::Null),
                            other => Err(Error::internal(format!(
                                "jsonb_agg of a {} value",
                                other.type_name()
                            ))),
                        })
                        .collect::<Result<Vec<Json>>>()?;
                    return Ok(Value::Jsonb(Box::new(Json::Array(elems))));
                }
                let texts: Vec<Option<String>> = items.iter().map(|(_, v)| v.to_text()).collect();
                Value::Text(crate::types::array::format(texts.iter().map(Option::as_deref)))
            }
        })
    }
}

/// One pair of `jsonb_object_agg`, from its `[key, value]` argument: the key as text (a string's
/// contents, a number's or boolean's JSON text), 22023 when it is NULL.
fn object_pair(v: Value) -> Result<(String, Json)> {
    let Value::Jsonb(pair) = v else {
        return Err(Error::internal("jsonb_object_agg of a non-jsonb pair"));
    };
    let Json::Array(mut kv) = *pair else {
        return Err(Error::internal("jsonb_object_agg of a non-array pair"));
    };
    let (Some(value), Some(key)) = (kv.pop(), kv.pop()) else {
        return Err(Error::internal("jsonb_object_agg of a short pair"));
    };
    let key = match key {
        Json::Null => {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "field name must not be null",
            ))
        }
        Json::String(s) => s,
        k => k.to_text(),
    };
    Ok((key, value))
}
