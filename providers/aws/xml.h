// A read-only XML tree parsed by libxml2 (no network, no entity expansion, bounded depth), and escaping
// for code that writes XML. EC2's Query API answers in XML.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::aws {

struct XmlNode {
  std::string name;  // local name, without a namespace prefix
  std::string text;  // the element's own text (and CDATA), not its descendants'
  std::vector<XmlNode> children;

  const XmlNode* child(std::string_view child_name) const;        // the first one, or null
  std::string child_text(std::string_view child_name) const;      // "" when absent
  // Follows a path of child names ("instanceState", "name"); null when any step is missing.
  const XmlNode* find(std::initializer_list<std::string_view> path) const;
  std::vector<const XmlNode*> all(std::string_view child_name) const;
};

// The document's root element. invalid_argument names the parse error; documents nested deeper than
// max_depth are refused.
Result<XmlNode> parse_xml(std::string_view text, int max_depth = 64);

// Escapes & < > " ' for text and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace tsum::providers::aws
