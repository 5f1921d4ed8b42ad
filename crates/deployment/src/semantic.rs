//! Kubernetes *semantic* equality (apimachinery `equality.Semantic.DeepEqual`) over
//! k8s-openapi values.
//!
//! Go compares typed structs: nil and empty slices/maps are equal, `resource.Quantity` compares
//! by numeric value (`1000m` == `1`), times by instant, a nil pointer differs from a pointer to
//! a zero value. k8s-openapi values are walked through serde's data model, which still tells a
//! struct (`serialize_struct`) from a map (`serialize_map`) and names `Quantity` newtypes, so the
//! same rules apply without a hand-written comparison per Kubernetes type:
//!
//! * a struct field that is absent, `null`, an empty list or an empty map equals any other of
//!   these (Go's nil/empty rule); an empty *struct* is kept (Go pointer to a zero value);
//! * maps compare key by key, lists element by element;
//! * quantities compare by exact value (in units of 10^-9, rounded away from zero as Go
//!   rounds sub-nano precision); a quantity that does not parse compares as text;
//! * times serialize as RFC 3339 UTC with second precision, so text equality is instant
//!   equality (sub-second parts are not compared; pod templates carry no such times).
//!
//! Known gap: a Go non-pointer string/number field is an `Option` in k8s-openapi, so `Some("")`
//! and `None` differ here while Go sees the same value. The API server never writes such
//! zero values (those fields are `omitempty`), so objects read from it compare as in Go.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::ser;

/// Whether `a` and `b` are semantically equal (see module doc). A value that cannot be
/// serialized is never equal to anything.
pub fn semantic_equal<T: Serialize>(a: &T, b: &T) -> bool {
    SemanticValue::of(a).equals(&SemanticValue::of(b))
}

/// A value walked once, to compare semantically with many others without walking it again.
#[derive(Debug, Clone)]
pub struct SemanticValue(Option<Sem>);

impl SemanticValue {
    /// `value` as the comparison sees it; a value that cannot be serialized equals nothing.
    pub fn of<T: Serialize>(value: &T) -> Self {
        match value.serialize(SemSerializer) {
            Ok(sem) => Self(Some(sem)),
            Err(error) => {
                tracing::debug!(%error, "semantic comparison failed to serialize a value");
                Self(None)
            }
        }
    }

    /// Whether the two values are semantically equal (see module doc).
    pub fn equals(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.equals(b),
            _ => false,
        }
    }
}

/// A serialized value that remembers struct vs map and quantities.
#[derive(Debug, Clone, PartialEq)]
enum Sem {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Quantity(QuantityValue),
    Seq(Vec<Sem>),
    Map(BTreeMap<String, Sem>),
    Struct(BTreeMap<String, Sem>),
}

impl Sem {
    /// Go's nil/empty family: absent, null, empty slice, empty map.
    fn is_nil_or_empty(&self) -> bool {
        match self {
            Sem::Null => true,
            Sem::Seq(items) => items.is_empty(),
            Sem::Map(entries) => entries.is_empty(),
            _ => false,
        }
    }

    fn equals(&self, other: &Sem) -> bool {
        match (self, other) {
            (Sem::Struct(a), Sem::Struct(b)) => {
                let field_equal = |key: &String| match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        (x.is_nil_or_empty() && y.is_nil_or_empty()) || x.equals(y)
                    }
                    (Some(x), None) | (None, Some(x)) => x.is_nil_or_empty(),
                    (None, None) => true,
                };
                a.keys().chain(b.keys()).all(field_equal)
            }
            (Sem::Map(a), Sem::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(key, x)| b.get(key).is_some_and(|y| x.equals(y)))
            }
            (Sem::Seq(a), Sem::Seq(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.equals(y))
            }
            (x, y) if x.is_nil_or_empty() && y.is_nil_or_empty() => true,
            (x, y) => x == y,
        }
    }
}

/// Numeric value of a Quantity in units of 10^-9, or its text when it does not parse (or
/// does not fit).
#[derive(Debug, Clone, PartialEq)]
enum QuantityValue {
    Nanos(i128),
    Text(String),
}

fn quantity_value(text: &str) -> QuantityValue {
    parse_quantity_nanos(text).map_or_else(
        || QuantityValue::Text(text.to_owned()),
        QuantityValue::Nanos,
    )
}

/// Parses `<sign><digits>[.<digits>]<suffix>` (suffix: `n u m "" k M G T P E`, `Ki..Ei`, or
/// `e<int>`/`E<int>`) into nano units, rounding sub-nano precision away from zero.
fn parse_quantity_nanos(text: &str) -> Option<i128> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let (pow10, pow2) = suffix_scale(suffix)?;
    let mut mantissa: i128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    let fraction_len = i32::try_from(fraction.len()).ok()?;
    let scale = pow10.checked_add(9)?.checked_sub(fraction_len)?;
    let mut nanos = mantissa.checked_mul(1i128.checked_shl(pow2)?)?;
    if scale >= 0 {
        nanos = nanos.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?;
    } else {
        let divisor = 10i128.checked_pow(u32::try_from(-scale).ok()?)?;
        nanos = nanos / divisor + i128::from(nanos % divisor != 0);
    }
    Some(if negative { -nanos } else { nanos })
}

/// `(power of 10, power of 2)` of a quantity suffix: the decimal ones are factors of 1000
/// apart (from nano to exa), the binary ones factors of 1024 (from kibi to exbi).
fn suffix_scale(suffix: &str) -> Option<(i32, u32)> {
    const DECIMAL: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
    const BINARY: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(index) = DECIMAL.iter().position(|prefix| *prefix == suffix) {
        return Some((3 * i32::try_from(index).ok()? - 9, 0));
    }
    if let Some(index) = BINARY.iter().position(|prefix| *prefix == suffix) {
        return Some((0, 10 * (u32::try_from(index).ok()? + 1)));
    }
    Some((suffix.strip_prefix(['e', 'E'])?.parse().ok()?, 0))
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SemError(String);

impl ser::Error for SemError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SemError(msg.to_string())
    }
}

struct SemSerializer;

/// Collects list elements (and tuple variants, wrapped in a one-entry map).
struct SeqBuilder {
    variant: Option<&'static str>,
    items: Vec<Sem>,
}

impl SeqBuilder {
    fn new(variant: Option<&'static str>, len: usize) -> Self {
        SeqBuilder {
            variant,
            items: Vec::with_capacity(len),
        }
    }
}

/// Collects struct fields (and struct variants, wrapped in a one-entry map).
struct StructBuilder {
    variant: Option<&'static str>,
    fields: BTreeMap<String, Sem>,
}

impl StructBuilder {
    fn new(variant: Option<&'static str>) -> Self {
        StructBuilder {
            variant,
            fields: BTreeMap::new(),
        }
    }
}

struct MapBuilder {
    entries: BTreeMap<String, Sem>,
    key: Option<String>,
}

fn wrap_variant(variant: Option<&'static str>, value: Sem) -> Sem {
    match variant {
        Some(name) => Sem::Map(BTreeMap::from([(name.to_owned(), value)])),
        None => value,
    }
}

fn key_text(key: Sem) -> String {
    match key {
        Sem::Str(text) => text,
        other => format!("{other:?}"),
    }
}

/// `Serializer` methods of the integer types, which all widen to [`Sem::Int`].
macro_rules! serialize_ints {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<Sem, SemError> {
            Ok(Sem::Int(v.into()))
        }
    )*};
}

impl ser::Serializer for SemSerializer {
    type Ok = Sem;
    type Error = SemError;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = SeqBuilder;
    type SerializeMap = MapBuilder;
    type SerializeStruct = StructBuilder;
    type SerializeStructVariant = StructBuilder;

    serialize_ints!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
    );

    fn serialize_bool(self, v: bool) -> Result<Sem, SemError> {
        Ok(Sem::Bool(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Sem, SemError> {
        Ok(Sem::Int(v))
    }
    fn serialize_u128(self, v: u128) -> Result<Sem, SemError> {
        i128::try_from(v)
            .map(Sem::Int)
            .map_err(|_| SemError("u128 out of range".to_owned()))
    }
    fn serialize_f32(self, v: f32) -> Result<Sem, SemError> {
        Ok(Sem::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Sem, SemError> {
        Ok(Sem::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Sem, SemError> {
        Ok(Sem::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Sem, SemError> {
        Ok(Sem::Str(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Sem, SemError> {
        Ok(Sem::Seq(v.iter().map(|b| Sem::Int((*b).into())).collect()))
    }
    fn serialize_none(self) -> Result<Sem, SemError> {
        Ok(Sem::Null)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Sem, SemError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Sem, SemError> {
        Ok(Sem::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Sem, SemError> {
        Ok(Sem::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Sem, SemError> {
        Ok(Sem::Str(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Sem, SemError> {
        match value.serialize(SemSerializer)? {
            Sem::Str(text) if name == "Quantity" => Ok(Sem::Quantity(quantity_value(&text))),
            other => Ok(other),
        }
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Sem, SemError> {
        Ok(wrap_variant(Some(variant), value.serialize(SemSerializer)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, SemError> {
        Ok(SeqBuilder::new(None, len.unwrap_or(0)))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, SemError> {
        Ok(SeqBuilder::new(None, len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, SemError> {
        Ok(SeqBuilder::new(None, len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, SemError> {
        Ok(SeqBuilder::new(Some(variant), len))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapBuilder, SemError> {
        Ok(MapBuilder {
            entries: BTreeMap::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<StructBuilder, SemError> {
        Ok(StructBuilder::new(None))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<StructBuilder, SemError> {
        Ok(StructBuilder::new(Some(variant)))
    }
}

/// serde's list-like traits (`SerializeSeq`, `SerializeTuple`, `SerializeTupleStruct`,
/// `SerializeTupleVariant`), identical but for the name of the element method.
macro_rules! impl_seq_builder {
    ($($trait:ident::$method:ident),* $(,)?) => {$(
        impl ser::$trait for SeqBuilder {
            type Ok = Sem;
            type Error = SemError;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), SemError> {
                self.items.push(value.serialize(SemSerializer)?);
                Ok(())
            }
            fn end(self) -> Result<Sem, SemError> {
                Ok(wrap_variant(self.variant, Sem::Seq(self.items)))
            }
        }
    )*};
}

impl_seq_builder!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

/// serde's struct-like traits (`SerializeStruct`, `SerializeStructVariant`), identical.
macro_rules! impl_struct_builder {
    ($($trait:ident),* $(,)?) => {$(
        impl ser::$trait for StructBuilder {
            type Ok = Sem;
            type Error = SemError;
            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), SemError> {
                self.fields.insert(key.to_owned(), value.serialize(SemSerializer)?);
                Ok(())
            }
            fn end(self) -> Result<Sem, SemError> {
                Ok(wrap_variant(self.variant, Sem::Struct(self.fields)))
            }
        }
    )*};
}

impl_struct_builder!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for MapBuilder {
    type Ok = Sem;
    type Error = SemError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), SemError> {
        self.key = Some(key_text(key.serialize(SemSerializer)?));
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), SemError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| SemError("map value without a key".to_owned()))?;
        self.entries.insert(key, value.serialize(SemSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Sem, SemError> {
        Ok(Sem::Map(self.entries))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Volume;
    use k8s_openapi::api::core::v1::{
        Container, PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn with_cpu(cpu: &str) -> PodSpec {
        PodSpec {
            containers: vec![Container {
                name: "c".to_owned(),
                resources: Some(ResourceRequirements {
                    limits: Some(BTreeMap::from([(
                        "cpu".to_owned(),
                        Quantity(cpu.to_owned()),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn quantities_compare_by_value() {
        let cases = [
            ("1000m", "1", true),
            ("1", "1", true),
            ("0.1", "100m", true),
            ("1Gi", "1073741824", true),
            ("1.5Gi", "1536Mi", true),
            ("1e3", "1k", true),
            ("1", "2", false),
            ("100m", "0.2", false),
            ("-1", "1", false),
            ("junk", "junk", true),
            ("junk", "1", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(
                semantic_equal(&with_cpu(a), &with_cpu(b)),
                want,
                "{a} vs {b}"
            );
        }
    }

    #[test]
    fn nil_and_empty_collections_are_equal() {
        let bare = PodTemplateSpec {
            metadata: Some(ObjectMeta::default()),
            spec: Some(PodSpec::default()),
        };
        let empty_collections = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::new()),
                annotations: Some(BTreeMap::new()),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                volumes: Some(Vec::<Volume>::new()),
                node_selector: Some(BTreeMap::new()),
                ..Default::default()
            }),
        };
        assert!(semantic_equal(&bare, &empty_collections));
    }

    #[test]
    fn nil_pointer_differs_from_pointer_to_zero_value() {
        let without = PodSpec::default();
        let with = PodSpec {
            security_context: Some(PodSecurityContext::default()),
            ..Default::default()
        };
        assert!(!semantic_equal(&without, &with));
        let zero_grace = PodSpec {
            termination_grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert!(!semantic_equal(&without, &zero_grace));
    }

    #[test]
    fn map_entries_and_list_order_matter() {
        let a = ObjectMeta {
            labels: Some(BTreeMap::from([("a".to_owned(), "1".to_owned())])),
            ..Default::default()
        };
        let b = ObjectMeta {
            labels: Some(BTreeMap::from([("a".to_owned(), "2".to_owned())])),
            ..Default::default()
        };
        assert!(!semantic_equal(&a, &b));
        let one = PodSpec {
            containers: vec![
                Container {
                    name: "x".to_owned(),
                    ..Default::default()
                },
                Container {
                    name: "y".to_owned(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let mut swapped = one.clone();
        swapped.containers.reverse();
        assert!(!semantic_equal(&one, &swapped));
    }
}
