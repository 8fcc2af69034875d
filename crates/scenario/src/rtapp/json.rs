//! The JSON document rt-app reads, with the byte position of every key and
//! value, and a key written twice in one object reduced the way json-c
//! reduces it (one entry, at the first key's place, with the last value).

use std::ops::Range;

use jsonc_parser::ast;
use schedlab_topology::InputError;
use toml::{Spanned, Value};

use crate::values::Ctx;

/// An object: its properties in file order, duplicates included.
#[derive(Debug)]
pub(crate) struct Obj {
    /// Offset of its `{`.
    pub at: usize,
    pub props: Vec<Prop>,
}

#[derive(Debug)]
pub(crate) struct Prop {
    pub key: String,
    /// Offset of the key (its opening quote).
    pub key_at: usize,
    pub value: J,
}

/// A JSON value and where it is.
#[derive(Debug)]
pub(crate) struct J {
    pub range: Range<usize>,
    pub kind: Kind,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Str(String),
    Int(i64),
    /// A number that is not an integer.
    Number,
    Bool(bool),
    Null,
    Obj(Obj),
    Arr(Vec<J>),
}

/// json-c's leniency, which rt-app files use: comments and trailing commas.
fn options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A key written more than once in one object: json-c kept one entry, at
/// the first key's place, with the last value.
#[derive(Debug)]
pub(crate) struct Replaced {
    pub key: String,
    /// Offset of the first occurrence's key: where the entry stays.
    pub first_at: usize,
    /// The value that was replaced (an earlier occurrence's).
    pub dropped: Range<usize>,
    /// The value the entry holds now.
    pub kept: Range<usize>,
}

/// Parse the file; its top level must be an object. Every key written twice
/// in one object is reduced as json-c reduces it; each reduction is listed,
/// in file order, so the reader can say what rt-app will not run.
pub(crate) fn parse(ctx: Ctx) -> Result<(Obj, Vec<Replaced>), InputError> {
    let parsed = jsonc_parser::parse_to_ast(ctx.text, &Default::default(), &options())
        .map_err(|e| ctx.at(e.range().start, format!("invalid JSON: {}", e.kind())))?;
    let Some(value) = parsed.value else {
        return Err(ctx.at(0, "the file holds no JSON value: expected an rt-app object { \"tasks\": ... }"));
    };
    let mut replaced = Vec::new();
    match convert(value, &mut replaced) {
        J { kind: Kind::Obj(o), .. } => Ok((o, replaced)),
        j => {
            Err(ctx
                .at(j.range.start, format!("expected an rt-app object {{ \"tasks\": ... }}, found {}", j.type_name())))
        }
    }
}

fn convert(v: ast::Value, replaced: &mut Vec<Replaced>) -> J {
    let range = {
        let r = jsonc_parser::common::Ranged::range(&v);
        r.start..r.end
    };
    let kind = match v {
        ast::Value::StringLit(s) => Kind::Str(s.value.into_owned()),
        ast::Value::NumberLit(n) => match n.value.parse::<i64>() {
            Ok(i) => Kind::Int(i),
            Err(_) => Kind::Number,
        },
        ast::Value::BooleanLit(b) => Kind::Bool(b.value),
        ast::Value::NullKeyword(_) => Kind::Null,
        ast::Value::Array(a) => Kind::Arr(a.elements.into_iter().map(|e| convert(e, replaced)).collect()),
        ast::Value::Object(o) => {
            let at = o.range.start;
            let mut props: Vec<Prop> = Vec::with_capacity(o.properties.len());
            // Key -> index in `props`, so a hostile object of many keys stays linear.
            let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            for p in o.properties {
                let key_at = jsonc_parser::common::Ranged::range(&p.name).start;
                let key = p.name.into_string();
                let value = convert(p.value, replaced);
                // json-c's json_object_object_add() looks the key up and, when
                // it is there, swaps the value in place: the object keeps one
                // entry per key, at the first one's place, holding the last
                // value. rt-app walks that object, so that is the workload.
                match index.get(&key).map(|&i| &mut props[i]) {
                    Some(first) => {
                        replaced.push(Replaced {
                            key: key.clone(),
                            first_at: first.key_at,
                            dropped: first.value.range.clone(),
                            kept: value.range.clone(),
                        });
                        first.value = value;
                    }
                    None => {
                        index.insert(key.clone(), props.len());
                        props.push(Prop { key, key_at, value });
                    }
                }
            }
            Kind::Obj(Obj { at, props })
        }
    };
    J { range, kind }
}

impl Obj {
    /// The property `key` (keys are unique once parsed).
    pub(crate) fn get(&self, key: &str) -> Option<&Prop> {
        self.props.iter().find(|p| p.key == key)
    }

    pub(crate) fn get_object(&self, ctx: Ctx, key: &str) -> Result<Option<&Obj>, InputError> {
        self.get(key).map(|p| p.value.as_object(ctx, key)).transpose()
    }
}

impl J {
    pub(crate) fn span(&self) -> Range<usize> {
        self.range.clone()
    }

    pub(crate) fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Number => "a non-integer number",
            Kind::Bool(_) => "a boolean",
            Kind::Null => "null",
            Kind::Obj(_) => "an object",
            Kind::Arr(_) => "an array",
        }
    }

    /// The value as written in the file.
    pub(crate) fn source<'t>(&self, ctx: Ctx<'t>) -> &'t str {
        ctx.text.get(self.range.clone()).unwrap_or("")
    }

    fn wrong(&self, ctx: Ctx, key: &str, want: &str) -> InputError {
        ctx.at(self.range.start, format!("`{key}`: expected {want}, found {}", self.type_name()))
    }

    pub(crate) fn as_int(&self, ctx: Ctx, key: &str) -> Result<i64, InputError> {
        match self.kind {
            Kind::Int(i) => Ok(i),
            _ => Err(self.wrong(ctx, key, "an integer")),
        }
    }

    pub(crate) fn as_bool(&self, ctx: Ctx, key: &str) -> Result<bool, InputError> {
        match self.kind {
            Kind::Bool(b) => Ok(b),
            _ => Err(self.wrong(ctx, key, "true or false")),
        }
    }

    pub(crate) fn as_str(&self, ctx: Ctx, key: &str) -> Result<&str, InputError> {
        match &self.kind {
            Kind::Str(s) => Ok(s),
            _ => Err(self.wrong(ctx, key, "a string")),
        }
    }

    /// A string with the span of its text (inside the quotes).
    pub(crate) fn as_spanned_string(&self, ctx: Ctx, key: &str) -> Result<Spanned<String>, InputError> {
        let s = self.as_str(ctx, key)?;
        Ok(Spanned::new(self.range.start + 1..self.range.end.saturating_sub(1), s.to_string()))
    }

    /// A duration string such as "500us", for the builder to parse.
    pub(crate) fn as_duration_string(&self, ctx: Ctx, key: &str) -> Result<Spanned<Value>, InputError> {
        let s = self.as_str(ctx, key)?;
        Ok(Spanned::new(self.span(), Value::String(s.to_string())))
    }

    pub(crate) fn as_object(&self, ctx: Ctx, key: &str) -> Result<&Obj, InputError> {
        match &self.kind {
            Kind::Obj(o) => Ok(o),
            _ => Err(self.wrong(ctx, key, "an object")),
        }
    }

    pub(crate) fn as_array(&self, ctx: Ctx, key: &str) -> Result<&[J], InputError> {
        match &self.kind {
            Kind::Arr(a) => Ok(a),
            _ => Err(self.wrong(ctx, key, "an array")),
        }
    }

    /// rt-app's `cpus`: an array of CPU numbers, as an affinity value.
    pub(crate) fn as_cpus(&self, ctx: Ctx) -> Result<Spanned<Value>, InputError> {
        let items = self.as_array(ctx, "cpus")?;
        let mut cpus = Vec::with_capacity(items.len());
        for item in items {
            cpus.push(Value::Integer(item.as_int(ctx, "cpus")?));
        }
        Ok(Spanned::new(self.span(), Value::Array(cpus)))
    }
}
