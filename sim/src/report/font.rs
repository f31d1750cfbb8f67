//! The font every plot is drawn with, embedded in the binary.
//!
//! plotters' default `ttf` feature asks font-kit for the system's fonts, so a machine without fonts (a CI container)
//! would render PNGs without text or fail. With the `ab_glyph` feature plotters only knows the fonts registered
//! here: DejaVu Sans (license in `sim/assets/fonts/`), registered as `sans-serif`, the family the plots ask for.
//! SVGs name the same generic family and let the viewer pick a font; their layout is measured with this one.

use std::sync::OnceLock;

use plotters::style::{FontStyle, register_font};

/// The family name the plots use.
pub(crate) const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Registers the embedded font once per process. Registration only parses the font's tables, so it fails only if the
/// embedded bytes are not a font.
pub(crate) fn ensure_registered() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        // Bold and italic fall back to the normal face; the other generic families map to the same file so that
        // no text anywhere can ask for a font that is not there.
        ["sans-serif", "serif", "monospace"]
            .iter()
            .all(|family| register_font(family, FontStyle::Normal, DEJAVU_SANS).is_ok())
    });
    if ok { Ok(()) } else { Err("the embedded font (DejaVu Sans) could not be parsed".to_string()) }
}
