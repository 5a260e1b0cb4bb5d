//! How every record here writes a time: RFC 3339 UTC with milliseconds, read back leniently.

use std::time::SystemTime;

use serde::Deserialize;

/// Writes `ts` as RFC 3339 UTC with milliseconds (`2026-01-01T00:00:01.250Z`).
pub(crate) fn serialize_ts<S: serde::Serializer>(ts: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*ts))
}

/// Reads a time [`serialize_ts`] wrote (or any RFC 3339 UTC time).
pub(crate) fn deserialize_ts<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<SystemTime, D::Error> {
    let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
    humantime::parse_rfc3339_weak(&text).map_err(|err| {
        serde::de::Error::custom(format_args!(
            "{text:?}: {err}; expected an RFC 3339 UTC time"
        ))
    })
}

/// An optional time, written as [`serialize_ts`] writes one.
pub(crate) mod optional_ts {
    use std::time::SystemTime;

    use serde::Deserialize;

    pub(crate) fn serialize<S: serde::Serializer>(
        ts: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => super::serialize_ts(ts, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        #[derive(Deserialize)]
        struct Ts(#[serde(deserialize_with = "super::deserialize_ts")] SystemTime);
        Ok(Option::<Ts>::deserialize(d)?.map(|Ts(ts)| ts))
    }
}
