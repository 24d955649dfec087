//! The values printer: the message's fields alone, as one JSON object on one line, in
//! the shape `kwire encode` takes back ([`crate::values::to_values`]; documented in
//! `docs/values-format.md`).
//!
//! ```json
//! {"kind":"request","api_key":20,"api_name":"DeleteTopics","api_version":6,
//!  "header":{"correlation_id":0,"client_id":""},
//!  "body":{"Topics":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000"}],"TimeoutMs":0}}
//! ```

use std::io::{self, Write};

use crate::tree::Message;

/// Prints the values object of `msg` as one JSON line.
///
/// # Errors
/// The writer's errors.
pub fn render(w: &mut dyn Write, msg: &Message<'_>) -> io::Result<()> {
    thread_local! {
        /// The line, reused from message to message.
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    super::with_thread_buffer(&LINE, |out| {
        crate::values::write_values(out, msg);
        out.push(b'\n');
        let r = w.write_all(out);
        out.clear();
        r
    })
}
