//! Input sources: turning what the user gives kwire (hex text, base64, files) into bytes.
pub mod hex;
