pub mod bench;
pub mod decode;
pub mod encode;
pub mod templates;
