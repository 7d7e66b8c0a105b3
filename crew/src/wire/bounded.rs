//! A serde adapter between bincode and the decoded types that keeps a lying length from costing
//! memory (decision 0063).
//!
//! Two places would otherwise reserve memory on a length the payload merely claims:
//! - bincode's owned strings and byte buffers (`deserialize_string`, `deserialize_byte_buf`)
//!   allocate the claimed bytes, zeroed, and only then find the payload short. The adapter asks
//!   for the borrowed forms instead (`deserialize_str`, `deserialize_bytes`): bincode then checks
//!   that the bytes are in the payload before anything is allocated, and the type copies exactly
//!   those bytes.
//! - a list's or map's length is not counted against bincode's budget, and serde reserves room
//!   for up to 1 MiB of elements on the claimed length ("cautious" size hints). The adapter caps
//!   every size hint at the payload's length: each element takes at least one byte of it (a
//!   zero-sized element would only grow the list as it decodes; the hint is never a promise).
//!
//! Everything else is handed through unchanged, wrapping each nested value, so the adapter holds
//! at every depth.

use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// A deserializer that reads strings and byte buffers borrowed and caps size hints at `cap`.
pub(super) struct Bounded<D> {
    pub(super) de: D,
    pub(super) cap: usize,
}

struct Wrap<V> {
    inner: V,
    cap: usize,
}

struct Nested<S> {
    inner: S,
    cap: usize,
}

struct Seq<A> {
    inner: A,
    cap: usize,
}

struct Map<A> {
    inner: A,
    cap: usize,
}

struct Enum<A> {
    inner: A,
    cap: usize,
}

struct Variant<A> {
    inner: A,
    cap: usize,
}

macro_rules! forward {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                let cap = self.cap;
                self.de.$method($($arg,)* Wrap { inner: visitor, cap })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Bounded<D> {
    type Error = D::Error;

    forward! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_bytes();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    /// Borrowed: the bytes are checked to be there before the type copies them.
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.deserialize_str(visitor)
    }

    /// Borrowed, as strings.
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.deserialize_bytes(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident ( $ty:ty );)*) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Bounded { de, cap: self.cap })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.inner
            .visit_newtype_struct(Bounded { de, cap: self.cap })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(Seq {
            inner: seq,
            cap: self.cap,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Map {
            inner: map,
            cap: self.cap,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Enum {
            inner: data,
            cap: self.cap,
        })
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nested<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Bounded { de, cap: self.cap })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Nested {
            inner: seed,
            cap: self.cap,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint().map(|n| n.min(self.cap))
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Nested {
            inner: seed,
            cap: self.cap,
        })
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.next_value_seed(Nested {
            inner: seed,
            cap: self.cap,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint().map(|n| n.min(self.cap))
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let cap = self.cap;
        let (value, variant) = self.inner.variant_seed(Nested { inner: seed, cap })?;
        Ok((
            value,
            Variant {
                inner: variant,
                cap,
            },
        ))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.newtype_variant_seed(Nested {
            inner: seed,
            cap: self.cap,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner.tuple_variant(
            len,
            Wrap {
                inner: visitor,
                cap: self.cap,
            },
        )
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.struct_variant(
            fields,
            Wrap {
                inner: visitor,
                cap: self.cap,
            },
        )
    }
}

/// Decodes a `T` through [`Bounded`], for `bincode::serde::seed_decode_from_slice`.
pub(super) struct Seed<T> {
    cap: usize,
    target: std::marker::PhantomData<fn() -> T>,
}

impl<T> Seed<T> {
    /// A seed whose size hints are capped at `cap` (the payload's length).
    pub(super) fn new(cap: usize) -> Self {
        Self {
            cap,
            target: std::marker::PhantomData,
        }
    }
}

impl<'de, T: serde::Deserialize<'de>> DeserializeSeed<'de> for Seed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<T, D::Error> {
        T::deserialize(Bounded { de, cap: self.cap })
    }
}
