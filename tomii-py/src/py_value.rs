//! A serde serializer that makes Python objects of what serde_json would write, without the text
//! in between: the report of a run reaches Python as the dict `json.loads` would have made of its
//! JSON (objects are dicts in field order, arrays lists, integers ints, non-finite floats None,
//! map keys strings, a unit variant its name, another variant `{name: value}`). Serializing to
//! text and parsing it again cost a short run more than the run itself.
//! It must never differ from serde_json's data model: the report file and the dict agree.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde::ser::{self, Serialize};

/// `value` as the Python object `json.loads(serde_json::to_string(value))` gives.
pub fn to_python<'py, T: Serialize + ?Sized>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    value.serialize(Maker { py }).map_err(|Error(error)| error)
}

/// Why a value could not be made: a Python error, or what serde_json would refuse.
pub struct Error(PyErr);

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<M: Display>(message: M) -> Self {
        Error(pyo3::exceptions::PyValueError::new_err(message.to_string()))
    }
}

impl From<PyErr> for Error {
    fn from(error: PyErr) -> Self {
        Error(error)
    }
}

#[derive(Clone, Copy)]
struct Maker<'py> {
    py: Python<'py>,
}

type Made<'py> = Result<Bound<'py, PyAny>, Error>;

impl<'py> Maker<'py> {
    fn object<T: IntoPyObject<'py, Error = std::convert::Infallible>>(self, value: T) -> Made<'py> {
        Ok(value.into_bound_py_any(self.py)?)
    }

    /// `{variant: value}`, as serde_json writes a variant that carries data.
    fn tagged(self, variant: &'static str, value: Bound<'py, PyAny>) -> Made<'py> {
        let dict = PyDict::new(self.py);
        dict.set_item(variant, value)?;
        Ok(dict.into_any())
    }
}

impl<'py> ser::Serializer for Maker<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    type SerializeSeq = Items<'py>;
    type SerializeTuple = Items<'py>;
    type SerializeTupleStruct = Items<'py>;
    type SerializeTupleVariant = Items<'py>;
    type SerializeMap = Fields<'py>;
    type SerializeStruct = Fields<'py>;
    type SerializeStructVariant = Fields<'py>;

    fn serialize_bool(self, v: bool) -> Made<'py> {
        Ok(pyo3::types::PyBool::new(self.py, v).to_owned().into_any())
    }
    fn serialize_i8(self, v: i8) -> Made<'py> {
        self.object(v)
    }
    fn serialize_i16(self, v: i16) -> Made<'py> {
        self.object(v)
    }
    fn serialize_i32(self, v: i32) -> Made<'py> {
        self.object(v)
    }
    fn serialize_i64(self, v: i64) -> Made<'py> {
        self.object(v)
    }
    fn serialize_i128(self, v: i128) -> Made<'py> {
        self.object(v)
    }
    fn serialize_u8(self, v: u8) -> Made<'py> {
        self.object(v)
    }
    fn serialize_u16(self, v: u16) -> Made<'py> {
        self.object(v)
    }
    fn serialize_u32(self, v: u32) -> Made<'py> {
        self.object(v)
    }
    fn serialize_u64(self, v: u64) -> Made<'py> {
        self.object(v)
    }
    fn serialize_u128(self, v: u128) -> Made<'py> {
        self.object(v)
    }
    fn serialize_f32(self, v: f32) -> Made<'py> {
        self.serialize_f64(f64::from(v))
    }
    /// serde_json writes a NaN or an infinity as null.
    fn serialize_f64(self, v: f64) -> Made<'py> {
        if v.is_finite() { self.object(v) } else { self.serialize_unit() }
    }
    fn serialize_char(self, v: char) -> Made<'py> {
        self.object(v)
    }
    fn serialize_str(self, v: &str) -> Made<'py> {
        Ok(PyString::new(self.py, v).into_any())
    }
    /// serde_json writes bytes as an array of numbers.
    fn serialize_bytes(self, v: &[u8]) -> Made<'py> {
        Ok(PyList::new(self.py, v)?.into_any())
    }
    fn serialize_none(self) -> Made<'py> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Made<'py> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Made<'py> {
        Ok(self.py.None().into_bound(self.py))
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Made<'py> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Made<'py> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Made<'py> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Made<'py> {
        let value = value.serialize(self)?;
        self.tagged(variant, value)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Items<'py>, Error> {
        Ok(Items { maker: self, list: PyList::empty(self.py), variant: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<Items<'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Items<'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Items<'py>, Error> {
        Ok(Items { maker: self, list: PyList::empty(self.py), variant: Some(variant) })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Fields<'py>, Error> {
        Ok(Fields { maker: self, dict: PyDict::new(self.py), key: None, variant: None })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Fields<'py>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Fields<'py>, Error> {
        Ok(Fields { maker: self, dict: PyDict::new(self.py), key: None, variant: Some(variant) })
    }
}

/// A list being filled: a sequence, a tuple, or a tuple variant's fields (`variant`).
pub struct Items<'py> {
    maker: Maker<'py>,
    list: Bound<'py, PyList>,
    variant: Option<&'static str>,
}

impl<'py> Items<'py> {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        Ok(self.list.append(value.serialize(self.maker)?)?)
    }

    fn done(self) -> Made<'py> {
        let list = self.list.into_any();
        match self.variant {
            Some(variant) => self.maker.tagged(variant, list),
            None => Ok(list),
        }
    }
}

/// The four serde traits of a sequence, each an `Items` filled in order.
macro_rules! serialize_items {
    ($($trait:ident::$add:ident),*) => {$(
        impl<'py> ser::$trait for Items<'py> {
            type Ok = Bound<'py, PyAny>;
            type Error = Error;
            fn $add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.push(value)
            }
            fn end(self) -> Made<'py> {
                self.done()
            }
        }
    )*};
}

serialize_items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A dict being filled: a map (`key` holds a key until its value comes), a struct, or a struct
/// variant's fields (`variant`).
pub struct Fields<'py> {
    maker: Maker<'py>,
    dict: Bound<'py, PyDict>,
    key: Option<Bound<'py, PyAny>>,
    variant: Option<&'static str>,
}

impl<'py> Fields<'py> {
    fn done(self) -> Made<'py> {
        let dict = self.dict.into_any();
        match self.variant {
            Some(variant) => self.maker.tagged(variant, dict),
            None => Ok(dict),
        }
    }
}

impl<'py> ser::SerializeMap for Fields<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(map_key(key.serialize(self.maker)?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(|| <Error as ser::Error>::custom("a map value without its key"))?;
        Ok(self.dict.set_item(key, value.serialize(self.maker)?)?)
    }
    fn end(self) -> Made<'py> {
        self.done()
    }
}

/// A map key as serde_json writes it: a string as it is, a number as its digits; anything else
/// is refused, as serde_json refuses it.
fn map_key(key: Bound<'_, PyAny>) -> Made<'_> {
    if key.is_instance_of::<PyString>() {
        return Ok(key);
    }
    if key.is_instance_of::<pyo3::types::PyInt>() && !key.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(key.str()?.into_any());
    }
    Err(ser::Error::custom("key must be a string"))
}

impl<'py> ser::SerializeStruct for Fields<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        Ok(self.dict.set_item(field_name(self.maker.py, key), value.serialize(self.maker)?)?)
    }
    fn end(self) -> Made<'py> {
        self.done()
    }
}

impl<'py> ser::SerializeStructVariant for Fields<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        Ok(self.dict.set_item(field_name(self.maker.py, key), value.serialize(self.maker)?)?)
    }
    fn end(self) -> Made<'py> {
        self.done()
    }
}

thread_local! {
    /// The Python strings of struct field names made so far, by the name's address: a report has
    /// a few dozen, made once per thread instead of once per run, their hashes computed once.
    static FIELD_NAMES: RefCell<HashMap<(usize, usize), Py<PyString>>> = RefCell::new(HashMap::new());
}

/// The Python string of the field name `name` (static text of this program: finitely many).
fn field_name<'py>(py: Python<'py>, name: &'static str) -> Bound<'py, PyString> {
    FIELD_NAMES.with_borrow_mut(|names| {
        names
            .entry((name.as_ptr() as usize, name.len()))
            .or_insert_with(|| PyString::intern(py, name).unbind())
            .bind(py)
            .clone()
    })
}
