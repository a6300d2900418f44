//! Programs run for plugins are confined by the operating system (Landlock, namespaces), not only by their argument lists.
