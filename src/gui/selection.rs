//! The editor's vertex selection: a set of simulated vertices that clicks,
//! boxes, brushes and groups replace, extend or reduce, and that the pin
//! buttons act on.

/// How a pick changes the selection (shift adds, ctrl removes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectMode {
    /// The picked vertices become the selection.
    Replace,
    /// The picked vertices join the selection.
    Add,
    /// The picked vertices leave the selection.
    Remove,
}

impl SelectMode {
    /// The mode the modifier keys ask for: ctrl removes, shift adds.
    pub fn from_modifiers(shift: bool, ctrl: bool) -> Self {
        if ctrl {
            Self::Remove
        } else if shift {
            Self::Add
        } else {
            Self::Replace
        }
    }
}

/// Selected vertices of a model with a fixed vertex count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    flags: Vec<bool>,
    count: usize,
}

impl Selection {
    /// Nothing selected among `vertices` vertices.
    pub fn new(vertices: usize) -> Self {
        Self {
            flags: vec![false; vertices],
            count: 0,
        }
    }

    /// Vertices selectable.
    pub fn vertex_count(&self) -> usize {
        self.flags.len()
    }

    /// Selected vertices.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether `vertex` is selected (false beyond the model).
    pub fn contains(&self, vertex: u32) -> bool {
        self.flags.get(vertex as usize).copied().unwrap_or(false)
    }

    /// The selected vertices, ascending.
    pub fn indices(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// The selected vertices, ascending, without a list (for each frame's
    /// markers).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (self.flags.iter().enumerate())
            .filter(|(_, s)| **s)
            .map(|(i, _)| i as u32)
    }

    /// Changes the selection by `picked` as `mode` says (vertices beyond
    /// the model are ignored).
    pub fn apply(&mut self, mode: SelectMode, picked: &[u32]) {
        if mode == SelectMode::Replace {
            self.clear();
        }
        let on = mode != SelectMode::Remove;
        for &v in picked {
            if let Some(flag) = self.flags.get_mut(v as usize) {
                *flag = on;
            }
        }
        self.recount();
    }

    /// Selects what was not selected and vice versa.
    pub fn invert(&mut self) {
        for flag in &mut self.flags {
            *flag = !*flag;
        }
        self.recount();
    }

    /// Selects nothing.
    pub fn clear(&mut self) {
        self.flags.fill(false);
        self.count = 0;
    }

    fn recount(&mut self) {
        self.count = self.flags.iter().filter(|&&s| s).count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_replace_add_and_remove() {
        let mut s = Selection::new(6);
        s.apply(SelectMode::Replace, &[1, 2, 9]);
        assert_eq!(s.indices(), [1, 2]);
        s.apply(SelectMode::Add, &[4, 2]);
        assert_eq!(s.indices(), [1, 2, 4]);
        s.apply(SelectMode::Remove, &[2, 5]);
        assert_eq!(s.indices(), [1, 4]);
        assert_eq!(s.len(), 2);
        s.invert();
        assert_eq!(s.indices(), [0, 2, 3, 5]);
        assert!(s.contains(3) && !s.contains(4) && !s.contains(60));
        s.apply(SelectMode::Replace, &[0]);
        assert_eq!(s.indices(), [0]);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn modifiers_choose_the_mode() {
        assert_eq!(
            SelectMode::from_modifiers(false, false),
            SelectMode::Replace
        );
        assert_eq!(SelectMode::from_modifiers(true, false), SelectMode::Add);
        assert_eq!(SelectMode::from_modifiers(false, true), SelectMode::Remove);
        assert_eq!(SelectMode::from_modifiers(true, true), SelectMode::Remove);
    }
}
