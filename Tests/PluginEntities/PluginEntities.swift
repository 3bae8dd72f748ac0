/// A target whose entity types the TributaryEntities build-tool plugin writes on every build, from
/// `notes.tributary.json` beside this file: `TypedEntityTests` uses them, so the plugin is tested by every build.
public enum PluginEntities {}
