//! A change to one optional field of a record: keep it, clear it, or set it. An edit names
//! what it does, so no value of the field has to stand for "clear".

/// What an edit does to one optional field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Edit<T> {
    /// The field stays as it is.
    #[default]
    Keep,
    /// The field is taken off.
    Clear,
    /// The field becomes this.
    Set(T),
}

impl<T> Edit<T> {
    /// An edit as a client wrote it, where absent keeps and a value that `clears` says so
    /// (such as an empty text or a zero) takes the field off.
    pub fn read(given: Option<T>, clears: impl FnOnce(&T) -> bool) -> Self {
        match given {
            None => Edit::Keep,
            Some(v) if clears(&v) => Edit::Clear,
            Some(v) => Edit::Set(v),
        }
    }

    /// Whether the field stays as it is.
    pub fn is_keep(&self) -> bool {
        matches!(self, Edit::Keep)
    }

    /// Makes the change to `field`.
    pub fn apply(self, field: &mut Option<T>) {
        match self {
            Edit::Keep => {}
            Edit::Clear => *field = None,
            Edit::Set(v) => *field = Some(v),
        }
    }

    /// The same edit of the value turned into another type.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Edit<U> {
        match self {
            Edit::Keep => Edit::Keep,
            Edit::Clear => Edit::Clear,
            Edit::Set(v) => Edit::Set(f(v)),
        }
    }

    /// The same edit with the value checked: the first refusal, if any.
    pub fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Edit<U>, E> {
        Ok(match self {
            Edit::Keep => Edit::Keep,
            Edit::Clear => Edit::Clear,
            Edit::Set(v) => Edit::Set(f(v)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Edit;

    #[test]
    fn absent_keeps_a_clearing_value_clears_and_any_other_sets() {
        let zero = |n: &u64| *n == 0;
        let mut field = Some(5);
        Edit::read(None, zero).apply(&mut field);
        assert_eq!(field, Some(5));
        Edit::read(Some(7), zero).apply(&mut field);
        assert_eq!(field, Some(7));
        Edit::read(Some(0), zero).apply(&mut field);
        assert_eq!(field, None);
    }

    #[test]
    fn a_checked_edit_keeps_its_kind_or_gives_the_refusal() {
        let half = |n: u64| {
            if n.is_multiple_of(2) {
                Ok(n / 2)
            } else {
                Err(n)
            }
        };
        assert_eq!(Edit::Set(8).try_map(half), Ok(Edit::Set(4)));
        assert_eq!(Edit::Set(3).try_map(half), Err(3));
        assert_eq!(Edit::<u64>::Clear.try_map(half), Ok(Edit::Clear));
        assert_eq!(Edit::<u64>::Keep.map(|n| n + 1), Edit::Keep);
    }
}
