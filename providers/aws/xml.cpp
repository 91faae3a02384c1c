#include "providers/aws/xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <climits>
#include <memory>
#include <mutex>

namespace tsum::providers::aws {

namespace {

struct DocDeleter {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
};

bool convert(const xmlNode* in, XmlNode& out, int depth, int max_depth) {
  if (depth > max_depth) return false;
  out.name = reinterpret_cast<const char*>(in->name);
  for (const xmlNode* c = in->children; c; c = c->next) {
    if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
      if (c->content) out.text += reinterpret_cast<const char*>(c->content);
    } else if (c->type == XML_ELEMENT_NODE) {
      out.children.emplace_back();
      if (!convert(c, out.children.back(), depth + 1, max_depth)) return false;
    }
  }
  return true;
}

}  // namespace

const XmlNode* XmlNode::child(std::string_view child_name) const {
  for (const auto& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

std::string XmlNode::child_text(std::string_view child_name) const {
  const XmlNode* c = child(child_name);
  return c ? c->text : std::string();
}

const XmlNode* XmlNode::find(std::initializer_list<std::string_view> path) const {
  const XmlNode* at = this;
  for (auto step : path)
    if (!(at = at->child(step))) return nullptr;
  return at;
}

std::vector<const XmlNode*> XmlNode::all(std::string_view child_name) const {
  std::vector<const XmlNode*> out;
  for (const auto& c : children)
    if (c.name == child_name) out.push_back(&c);
  return out;
}

Result<XmlNode> parse_xml(std::string_view text, int max_depth) {
  static std::once_flag init;
  std::call_once(init, [] { xmlInitParser(); });  // not thread-safe when left to the first parse
  if (text.size() > static_cast<std::size_t>(INT_MAX)) return make_error(Code::invalid_argument, "xml: document too large");
  std::unique_ptr<xmlParserCtxt, DocDeleter> ctxt(xmlNewParserCtxt());
  if (!ctxt) return make_error(Code::internal, "xml: out of memory");
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS;
  std::unique_ptr<xmlDoc, DocDeleter> doc(
      xmlCtxtReadMemory(ctxt.get(), text.data(), static_cast<int>(text.size()), nullptr, nullptr, options));
  if (!doc) {
    const xmlError* e = xmlCtxtGetLastError(ctxt.get());
    std::string why = e && e->message ? e->message : "malformed document";
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return make_error(Code::invalid_argument, "xml: " + why + (e ? " (line " + std::to_string(e->line) + ")" : ""));
  }
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root) return make_error(Code::invalid_argument, "xml: no root element");
  XmlNode out;
  if (!convert(root, out, 1, max_depth))
    return make_error(Code::invalid_argument, "xml: nested deeper than " + std::to_string(max_depth) + " levels");
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tsum::providers::aws
