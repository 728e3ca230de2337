pub mod r#gen;
pub mod lab;
pub mod values;
