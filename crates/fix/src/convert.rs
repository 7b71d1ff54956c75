//! A FAST stream through FIX and back, message by message: decode, write FIX, and (to
//! verify) read the FIX back, encode it and compare with the original bytes.

use std::sync::Arc;

use fastfeed_codec::{CodecError, DecodeOptions, Decoder, Encoder, Message, Templates};

use crate::{FixError, FixOptions, FixReader, FixWriter};

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The FAST data did not decode: the rest of the packet cannot be read.
    #[error("decoding: {0}")]
    Decode(CodecError),
    /// The message has no FIX form; `len` FAST bytes were consumed, decoding can go on.
    #[error("{error}")]
    Fix { error: FixError, len: usize },
}

/// One decoded message.
#[derive(Debug)]
pub enum Step<'a> {
    /// Written as FIX.
    Fix {
        template_id: u32,
        fast_len: usize,
        text: &'a [u8],
    },
    /// A FAST session control message: no FIX form.
    Session { template_id: u32, fast_len: usize },
}

/// The outcome of reading a FIX message back and encoding it.
#[derive(Debug, PartialEq, Eq)]
pub enum Verified {
    Identical,
    /// The encoding differs from the original bytes.
    Differs,
    /// The FIX text did not read back, or did not encode.
    Failed(String),
}

/// Converts a FAST stream and, on request, checks each message's round trip. The encoder
/// follows the decoder's dictionaries, so call [`Converter::verify`] for every step
/// (session messages included) or for none.
pub struct Converter {
    decoder: Decoder,
    writer: FixWriter,
    reader: FixReader,
    encoder: Encoder,
    scratch: Vec<u8>,
}

impl Converter {
    pub fn new(templates: Arc<Templates>, opts: &FixOptions, decode: DecodeOptions) -> Converter {
        Converter {
            decoder: Decoder::with_options(templates.clone(), decode),
            writer: FixWriter::new(&templates, opts),
            reader: FixReader::new(templates.clone(), opts),
            encoder: Encoder::new(templates),
            scratch: Vec::new(),
        }
    }

    /// Resets the dictionaries of both directions (a packet boundary that resets).
    pub fn reset(&mut self) {
        self.decoder.reset();
        self.encoder.reset();
    }

    pub fn writer(&self) -> &FixWriter {
        &self.writer
    }

    pub fn reader(&self) -> &FixReader {
        &self.reader
    }

    /// Decodes the message at the start of `buf` and writes it as FIX.
    pub fn step(&mut self, buf: &[u8]) -> Result<Step<'_>, StepError> {
        let len = self
            .decoder
            .decode(buf, &mut self.writer)
            .map_err(StepError::Decode)?;
        let template_id = self.writer.template_id();
        match self.writer.finish() {
            Ok(Some(text)) => Ok(Step::Fix {
                template_id,
                fast_len: len,
                text,
            }),
            Ok(None) => Ok(Step::Session {
                template_id,
                fast_len: len,
            }),
            Err(error) => Err(StepError::Fix { error, len }),
        }
    }

    /// Reads the FIX text of the last step back (or, after a session message, takes the
    /// message itself), encodes it and compares with `original`, the bytes it came from.
    pub fn verify(&mut self, original: &[u8]) -> Verified {
        let template_id = self.writer.template_id();
        let msg = match self.writer.last_text() {
            Some(text) => match self.reader.read(text) {
                Ok((m, _)) => m,
                Err(e) => return Verified::Failed(e.to_string()),
            },
            // Session control messages here are Reset and its like, with no fields; the
            // others (Hello, Alert) are not verified.
            None => Message {
                template_id,
                fields: Vec::new(),
            },
        };
        self.scratch.clear();
        match self.encoder.encode(&msg, &mut self.scratch) {
            Ok(()) if self.scratch == original => Verified::Identical,
            Ok(()) => Verified::Differs,
            Err(e) => Verified::Failed(format!("encoding: {e}")),
        }
    }
}
