pub mod r#gen;
pub mod values;
